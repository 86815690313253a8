import { eq, mirrorDeliveries, mirrors } from '@teamchat/db';
import { loadMirror, newId, requireAccount, testMessageBody, toMirrorDeliveryView, type Deps, type MirrorFormat } from '@teamchat/core';
import { deliverMirrorMessage } from './mirror-send';
import type { WebhookTransport } from './transport';
import { chargeDeliveryUnits } from './units';

/**
 * POST .../mirrors/{mirrorId}/test: sends one test line now, in this process, and answers the
 * logged send (kind `test`; a failure is `failed`, never retried). It costs one call unit on the
 * creator's seat like every send; with none left it is logged `failed` and nothing is sent. A
 * disabled mirror takes a test too (so a person can check a URL before enabling it); its pace
 * is not waited for, but is set after it.
 */
export async function sendMirrorTest(deps: Deps, transport: WebhookTransport, input: { accountId: string; mirrorId: string }) {
  const db = deps.database.db;
  const mirror = await loadMirror(db, input.accountId, input.mirrorId);
  const account = await requireAccount(db, input.accountId);
  const now = deps.now();
  const id = newId('mirrorDelivery');
  const [row] = await db.insert(mirrorDeliveries).values({
    id, chainId: id, accountId: mirror.accountId, mirrorId: mirror.id, kind: 'test', attempt: 1, status: 'pending',
    body: testMessageBody(mirror.format as MirrorFormat), lineCount: 1, createdAt: now,
  }).returning();
  let granted: number;
  try {
    [{ granted }] = await chargeDeliveryUnits(deps, [{ accountId: account.id, plan: account.plan, seatUserId: mirror.createdByUserId, units: 1 }]);
  } catch (err) {
    // The units live in Redis: while it is away no send is made (as no delivery takes a slot then).
    deps.logger.warn('mirror test not sent: Redis unavailable', { mirror_id: mirror.id, error: (err as Error).message });
    return failWithoutSending(deps, id, 'not attempted: Redis is unavailable, so its call unit could not be charged', now);
  }
  if (granted === 0) return failWithoutSending(deps, id, 'call units spent: the seat of the mirror\'s creator has no units left today', now);
  const out = await deliverMirrorMessage(deps, transport, mirror, row);
  await db.update(mirrors).set({ nextSendAt: out.nextSendAt }).where(eq(mirrors.id, mirror.id));
  return toMirrorDeliveryView(out.delivery);
}

/** The test's row, logged `failed` with `error` and nothing sent. */
async function failWithoutSending(deps: Deps, id: string, error: string, now: Date) {
  const [failed] = await deps.database.db
    .update(mirrorDeliveries)
    .set({ status: 'failed', error, attemptedAt: now })
    .where(eq(mirrorDeliveries.id, id))
    .returning();
  return toMirrorDeliveryView(failed);
}
