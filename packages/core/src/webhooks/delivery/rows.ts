import { and, eq, inArray, webhookDeliveries, webhookEndpoints, type Executor } from '@teamchat/db';

/**
 * The delivery log's rows (spec: Delivery transitions). One row per attempt; a row is created
 * `pending` (first attempt) or `retrying` with `next_retry_at` (a scheduled retry, or an attempt
 * waiting for the seat's call units), and after its attempt it becomes `delivered`, `failed` (a
 * retry row was scheduled) or `dead` (no further attempt). The delivery engine
 * (packages/delivery) writes the transitions; the rules here are shared with the endpoints'
 * use cases.
 */
export type DeliveryRow = typeof webhookDeliveries.$inferSelect;
export type EndpointRow = typeof webhookEndpoints.$inferSelect;
export type DeliveryStatus = 'pending' | 'delivered' | 'retrying' | 'failed' | 'dead';
export type DeliveryKind = 'event' | 'test' | 'replay';
export const OPEN_STATUSES: readonly DeliveryStatus[] = ['pending', 'retrying'];

/** A row with everything its attempt needs, as read right before it. */
export interface DeliveryContext {
  row: DeliveryRow;
  endpoint: EndpointRow;
  account: { id: string; plan: string; state: string };
  body: string;
}

/**
 * Drops the endpoint's open deliveries (spec: disabling for `failing` drops pending retries;
 * DELETE drops pending deliveries): they become `dead` with the reason, are never attempted,
 * and stay in the log (a replay can still send them). An attempt already under way then loses
 * its fence and records nothing.
 */
export async function dropOpenDeliveries(tx: Executor, endpointId: string, reason: string): Promise<number> {
  const rows = await tx
    .update(webhookDeliveries)
    .set({ status: 'dead', error: `dropped: ${reason}`, nextRetryAt: null })
    .where(and(eq(webhookDeliveries.endpointId, endpointId), inArray(webhookDeliveries.status, [...OPEN_STATUSES])))
    .returning({ id: webhookDeliveries.id });
  return rows.length;
}
