import { and, eq, gte, webhookDeliveries } from '@teamchat/db';
import { attemptNow, requireSendableEndpoint, type ManualResult } from './manual';
import { insertFirstAttempt } from './store';
import { assertMayReplayBody, deliveryLogFloor, errors, type Actor, type Deps } from '@teamchat/core';

/**
 * Replays a logged delivery, whatever its status (dead included): a new delivery (its own
 * chain, kind `replay`, attempt 1) of the same event id with exactly the body stored the first
 * time, sent now and answered like a test. A replay is one attempt: if it fails it is `dead`
 * (replay it again). If the creator's seat has no units left it waits as `retrying` until the
 * reset and the worker sends it then (nothing dropped). A `text` body is replayed only for a caller
 * who can read its channel (endpoints/text-access.ts).
 */
export async function replayDelivery(deps: Deps, input: { accountId: string; endpointId: string; deliveryId: string; actor: Actor }): Promise<ManualResult> {
  const db = deps.database.db;
  await requireSendableEndpoint(db, input.accountId, input.endpointId);
  const [logged] = await db
    .select()
    .from(webhookDeliveries)
    .where(and(
      eq(webhookDeliveries.id, input.deliveryId), eq(webhookDeliveries.endpointId, input.endpointId), eq(webhookDeliveries.accountId, input.accountId),
      gte(webhookDeliveries.createdAt, deliveryLogFloor(deps.now())), // the log shows 30 days
    ));
  if (!logged) throw errors.notFound('delivery');
  await assertMayReplayBody(db, { bodyId: logged.bodyId, actor: input.actor });
  const row = await insertFirstAttempt(db, {
    accountId: logged.accountId, endpointId: logged.endpointId, eventId: logged.eventId, eventType: logged.eventType,
    bodyId: logged.bodyId, kind: 'replay', eventCreatedAt: logged.eventCreatedAt,
  });
  return (await attemptNow(deps, row.id)).result;
}
