import { and, eq, isNull, webhookEndpoints, type Executor } from '@teamchat/db';
import { errors } from '../../errors';

export type WebhookEndpointRow = typeof webhookEndpoints.$inferSelect;

/** A live (not deleted) endpoint of the account, or 404; `forUpdate` locks the row. */
export async function loadEndpoint(
  db: Executor,
  accountId: string,
  endpointId: string,
  options: { forUpdate?: boolean } = {},
): Promise<WebhookEndpointRow> {
  const query = db
    .select()
    .from(webhookEndpoints)
    .where(and(eq(webhookEndpoints.id, endpointId), eq(webhookEndpoints.accountId, accountId), isNull(webhookEndpoints.deletedAt)));
  const [row] = options.forUpdate ? await query.for('update') : await query;
  if (!row) throw errors.notFound('webhook endpoint');
  return row;
}
