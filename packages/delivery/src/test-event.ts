import { webhookBodies } from '@teamchat/db';
import { attemptNow, requireSendableEndpoint, type WaitReason } from './manual';
import { failTestWithoutAttempt, insertFirstAttempt } from './store';
import { newId, renderTestEventBody, type Deps } from '@teamchat/core';

/** The answer of POST .../webhooks/{endpointId}/test, and of the test event that enabling delivers first. */
export interface TestDeliveryResult {
  /** the attempt's id (its X-Service-Delivery), a row of the delivery log */
  delivery_id: string;
  status: 'delivered' | 'failed';
  /** the receiver's HTTP status, or null when there was no answer */
  response_status: number | null;
  latency_ms: number | null;
  error: string | null;
}

/** Why a test event was not attempted, by the reason its attempt waited (Redis away, or every in-flight slot busy). */
function notAttempted(reason: WaitReason | null): string {
  if (reason === 'slots_unavailable') return 'not attempted: Redis is unavailable, so no in-flight slot could be taken';
  if (reason === 'units_unavailable') return 'not attempted: Redis is unavailable, so its call unit could not be charged';
  return 'not attempted: the account\'s deliveries in flight stayed at their limit';
}

/**
 * Delivers a `test` event to the endpoint now (enabled or not), in this process, and answers the
 * result. Never retried (spec: a failed test event is `failed`). Costs one call unit on the seat
 * of the endpoint's creator like every attempt (units spent: `failed`, nothing sent). Rate
 * limits (10/min per endpoint) are the route's. Throws not_found for an unknown endpoint.
 */
export async function deliverTestEvent(deps: Deps, input: { accountId: string; endpointId: string }): Promise<TestDeliveryResult> {
  const db = deps.database.db;
  const endpoint = await requireSendableEndpoint(db, input.accountId, input.endpointId);
  const now = deps.now();
  const eventId = newId('event');
  const row = await db.transaction(async (tx) => {
    const body = renderTestEventBody({ id: eventId, accountId: input.accountId, endpointId: endpoint.id, createdAt: now });
    const bodyId = newId('webhookBody');
    await tx.insert(webhookBodies).values({ id: bodyId, accountId: input.accountId, eventId, eventType: 'test', mode: 'test', body });
    return insertFirstAttempt(tx, { accountId: input.accountId, endpointId: endpoint.id, eventId, eventType: 'test', bodyId, kind: 'test', eventCreatedAt: now });
  });
  const { result, waitReason } = await attemptNow(deps, row.id);
  if (result.status === 'delivered' || result.status === 'failed') {
    return { delivery_id: row.id, status: result.status, response_status: result.response_status, latency_ms: result.latency_ms, error: result.error };
  }
  // Not attempted in time (every in-flight slot of the account busy, or Redis away): failed, never retried.
  const error = notAttempted(waitReason);
  await failTestWithoutAttempt(db, row.id, error, deps.now());
  return { delivery_id: row.id, status: 'failed', response_status: null, latency_ms: null, error };
}
