import { and, eq, inArray, webhookDeliveries, type Executor } from '@teamchat/db';

/**
 * Drops an endpoint's open deliveries (`pending`, `retrying`): they become `dead` with
 * `error: "dropped: <reason>"` and no `next_retry_at`, and stay in the log. The delivery engine
 * drops the same way on automatic disabling and when a queued delivery's endpoint is gone
 * (`dropOpenDeliveries` in webhooks/delivery/store.ts; once both are in main this should be that one
 * function). An attempt already under way finds its row closed and records nothing.
 */
export async function dropEndpointDeliveries(tx: Executor, endpointId: string, reason: string): Promise<number> {
  const rows = await tx
    .update(webhookDeliveries)
    .set({ status: 'dead', error: `dropped: ${reason}`, nextRetryAt: null })
    .where(and(eq(webhookDeliveries.endpointId, endpointId), inArray(webhookDeliveries.status, ['pending', 'retrying'])))
    .returning({ id: webhookDeliveries.id });
  return rows.length;
}
