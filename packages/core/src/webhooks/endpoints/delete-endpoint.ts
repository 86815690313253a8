import { eq, webhookEndpoints, type Executor } from '@teamchat/db';
import { recordAudit } from '../../audit';
import { urlOrigin } from '../../notifications/notify-admins';
import type { EndpointCall } from './context';
import { dropOpenDeliveries } from '../delivery/rows';
import { loadEndpoint } from './load';

/**
 * DELETE: sets `deleted_at` (and `enabled` false, so no query that forgets `deleted_at` can
 * deliver to it) and drops its open deliveries in the same transaction: every `pending` or
 * `retrying` row becomes `dead` with `error: "dropped: endpoint deleted"` (the delivery engine's
 * own rule for a deleted endpoint). Log rows are kept for the 30-day retention.
 * Returns how many deliveries were dropped.
 */
export async function deleteEndpoint(tx: Executor, input: EndpointCall & { endpointId: string }): Promise<{ dropped: number }> {
  const { deps, actor } = input;
  const row = await loadEndpoint(tx, actor.accountId, input.endpointId, { forUpdate: true });
  const now = deps.now();
  await tx
    .update(webhookEndpoints)
    .set({ deletedAt: now, enabled: false, disabledAt: row.enabled ? now : row.disabledAt, updatedAt: now })
    .where(eq(webhookEndpoints.id, row.id));
  const dropped = await dropOpenDeliveries(tx, row.id, 'endpoint deleted');
  await recordAudit(tx, {
    accountId: actor.accountId, action: 'webhook.deleted', actor, targetType: 'webhook_endpoint', targetId: row.id,
    data: { url_origin: urlOrigin(row.url), dropped_deliveries: dropped },
  });
  return { dropped };
}
