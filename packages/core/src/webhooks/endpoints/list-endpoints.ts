import { and, eq, isNull, webhookEndpoints, type Executor } from '@teamchat/db';
import { seqKeyset } from '../../pagination';
import { endpointHealth, type EndpointHealth } from './health';
import type { WebhookEndpointRow } from './load';

/**
 * The account's live endpoints, oldest first (keyset on seq), each with its health.
 * Returns `limit + 1` rows (the extra one only tells there is more).
 */
export async function listEndpoints(
  db: Executor,
  input: { accountId: string; now: Date; page: { limit: number; after: number | null } },
): Promise<Array<{ row: WebhookEndpointRow; health: EndpointHealth }>> {
  const k = seqKeyset(webhookEndpoints.seq, input.page.after, 'asc');
  const rows = await db
    .select()
    .from(webhookEndpoints)
    .where(and(eq(webhookEndpoints.accountId, input.accountId), isNull(webhookEndpoints.deletedAt), k.after))
    .orderBy(k.order)
    .limit(input.page.limit + 1);
  const health = await endpointHealth(db, rows.slice(0, input.page.limit).map((r) => r.id), input.now);
  return rows.map((row) => ({ row, health: health.get(row.id)! }));
}
