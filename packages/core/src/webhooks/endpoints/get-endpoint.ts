import type { Executor } from '@teamchat/db';
import { endpointHealth, type EndpointHealth } from './health';
import { loadEndpoint, type WebhookEndpointRow } from './load';

/** One live endpoint of the account with its health, or 404. */
export async function getEndpoint(
  db: Executor,
  input: { accountId: string; endpointId: string; now: Date },
): Promise<{ row: WebhookEndpointRow; health: EndpointHealth }> {
  const row = await loadEndpoint(db, input.accountId, input.endpointId);
  const health = await endpointHealth(db, [row.id], input.now);
  return { row, health: health.get(row.id)! };
}
