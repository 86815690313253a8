import { and, eq, inArray, webhookDeliveries, webhookEndpoints, type Executor } from '@teamchat/db';
import { recordAudit } from '../../audit';
import { urlOrigin } from '../../notifications/notify-admins';
import type { EndpointCall } from './context';
import { loadEndpoint } from './load';

/** The error written on the deliveries a DELETE drops. */
export const ENDPOINT_DELETED_ERROR = 'endpoint_deleted';

/**
 * DELETE: sets `deleted_at` (and `enabled` false, so no query that forgets `deleted_at` can
 * deliver to it) and drops its open deliveries in the same transaction: every `pending` or
 * `retrying` row becomes `failed` with error `endpoint_deleted` and no `next_retry_at`. Log rows
 * are kept (for the 30-day retention); a worker holding one of them finds it no longer open.
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
  const dropped = await tx
    .update(webhookDeliveries)
    .set({ status: 'failed', error: ENDPOINT_DELETED_ERROR, nextRetryAt: null, claimedUntil: null })
    .where(and(eq(webhookDeliveries.endpointId, row.id), inArray(webhookDeliveries.status, ['pending', 'retrying'])))
    .returning({ id: webhookDeliveries.id });
  await recordAudit(tx, {
    accountId: actor.accountId, action: 'webhook.deleted', actor, targetType: 'webhook_endpoint', targetId: row.id,
    data: { url_origin: urlOrigin(row.url), dropped_deliveries: dropped.length },
  });
  return { dropped: dropped.length };
}
