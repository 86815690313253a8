import { and, asc, eq, inArray, isNull, lte, mirrorDeliveries, ne, mirrorLines, mirrors, or, sql, type Executor } from '@teamchat/db';
import {
  ACCOUNT_INACTIVE_RECHECK_MS, AppError, claimMs, dropQueued, failingAfter, getAccount, newId, notifyAccountAdmins, packMessages, retryAfterMs, retryDelayAfter,
  urlOrigin, vetWebhookUrl, type Deps, type MirrorDeliveryRow, type MirrorDisabledReason, type MirrorFormat, type MirrorRow,
} from '@teamchat/core';
import { acquireInFlightSlot } from './in-flight';
import { answerError, isSuccess } from './send';
import type { PostResult, WebhookTransport } from './transport';
import { chargeDeliveryUnits } from './units';

/**
 * Sending a mirror's messages (docs/mirrors.md "Sending"): a second kind of target of the
 * delivery engine, with its transport, in-flight slots, URL guard, retry schedule, call units
 * and disabling rules, minus every header that could carry a secret. A mirror sends ONE message
 * at a time: a worker claims the mirror (its row's `claimed_until`), sends its oldest due
 * message on one of the account's in-flight slots, records the answer and sets `next_send_at`
 * (the pace) before another send of that mirror can start anywhere.
 */
export const MIRROR_USER_AGENT = 'teamchat-mirror/1';

/** Every header of a mirror send: no Authorization, no signature, no delivery ids. */
export const MIRROR_HEADERS: Readonly<Record<string, string>> = Object.freeze({ 'content-type': 'application/json', 'user-agent': MIRROR_USER_AGENT });

/** Waiting lines read at once to pack the next message (more wait for the following message). */
const PACK_LINES_MAX = 200;

export type MirrorSendOutcome =
  | { kind: 'idle'; mirrorId: string }
  | { kind: 'wait'; mirrorId: string; until: Date; reason: 'claimed' | 'account_inactive' | 'call_units_spent' | 'in_flight_cap' }
  | { kind: 'sent'; mirrorId: string; delivery: MirrorDeliveryRow; disabled: MirrorDisabledReason | null };

/**
 * Enabled mirrors with something to send now (lines waiting, or a send due) that no worker holds
 * and whose pace allows a message: the sender's scan. `accountIds` narrows it (tests sharing one database).
 */
export async function dueMirrors(db: Executor, now: Date, limit: number, accountIds?: readonly string[]): Promise<Array<{ id: string; accountId: string }>> {
  const rows = await db
    .select({ id: mirrors.id, accountId: mirrors.accountId })
    .from(mirrors)
    .where(and(
      eq(mirrors.enabled, true),
      isNull(mirrors.deletedAt),
      or(isNull(mirrors.claimedUntil), sql`${mirrors.claimedUntil} < ${now}`),
      or(isNull(mirrors.nextSendAt), lte(mirrors.nextSendAt, now)),
      accountIds ? inArray(mirrors.accountId, [...accountIds, '']) : undefined,
      sql`(EXISTS (SELECT 1 FROM mirror_lines l WHERE l.mirror_id = ${mirrors.id})
        OR EXISTS (SELECT 1 FROM mirror_deliveries d WHERE d.mirror_id = ${mirrors.id} AND d.status IN ('pending', 'retrying')
                     AND d.kind <> 'test' AND (d.next_retry_at IS NULL OR d.next_retry_at <= ${now})))`,
    ))
    .orderBy(asc(mirrors.nextSendAt))
    .limit(limit);
  return rows;
}

/**
 * One step of one mirror: claim it, send its oldest due message (packing waiting lines into one if
 * none is open), record, pace. `slotHeld`: the caller holds one of the account's in-flight slots
 * for this send (the dispatcher, mirror-sender.ts); otherwise the step takes one itself.
 */
export async function runMirrorSend(deps: Deps, transport: WebhookTransport, mirrorId: string, options: { slotHeld?: boolean } = {}): Promise<MirrorSendOutcome> {
  const db = deps.database.db;
  const now = deps.now();
  const claim = new Date(now.getTime() + claimMs(deps.config));
  const [mirror] = await db
    .update(mirrors)
    .set({ claimedUntil: claim })
    .where(and(
      eq(mirrors.id, mirrorId), eq(mirrors.enabled, true), isNull(mirrors.deletedAt),
      or(isNull(mirrors.claimedUntil), sql`${mirrors.claimedUntil} < ${now}`),
      or(isNull(mirrors.nextSendAt), lte(mirrors.nextSendAt, now)),
    ))
    .returning();
  if (!mirror) return { kind: 'wait', mirrorId, until: new Date(now.getTime() + 100), reason: 'claimed' };
  let next: Date | null = null;
  try {
    const account = await getAccount(db, mirror.accountId);
    if (!account || account.state !== 'active') {
      next = new Date(now.getTime() + ACCOUNT_INACTIVE_RECHECK_MS);
      return { kind: 'wait', mirrorId, until: next, reason: 'account_inactive' };
    }
    // The account's in-flight cap counts mirror sends with its webhook attempts: one account's
    // slow mirror receiver holds only that account's share (none free: the next scan tries again).
    const lease = options.slotHeld ? { release: async () => undefined } : await acquireInFlightSlot(deps, mirror.accountId, claimMs(deps.config));
    if (!lease) return { kind: 'wait', mirrorId, until: new Date(now.getTime() + 100), reason: 'in_flight_cap' };
    try {
      const row = await nextMessage(deps, mirror, now);
      if (!row) return { kind: 'idle', mirrorId };
      const [units] = await chargeDeliveryUnits(deps, [{ accountId: account.id, plan: account.plan, seatUserId: mirror.createdByUserId, units: 1 }]);
      if (units.granted === 0) {
        next = units.resetsAt ?? new Date(now.getTime() + ACCOUNT_INACTIVE_RECHECK_MS);
        return { kind: 'wait', mirrorId, until: next, reason: 'call_units_spent' };
      }
      const out = await deliverMirrorMessage(deps, transport, mirror, row);
      next = out.nextSendAt;
      return { kind: 'sent', mirrorId, delivery: out.delivery, disabled: out.disabled };
    } finally {
      await lease.release();
    }
  } finally {
    await db
      .update(mirrors)
      .set({ claimedUntil: null, ...(next ? { nextSendAt: next } : {}) })
      .where(and(eq(mirrors.id, mirrorId), eq(mirrors.claimedUntil, claim)));
  }
}

/**
 * The mirror's oldest send that is due (a retry, or a later part of a split line), else the
 * waiting lines packed into the next message (one row; several for a line split across messages):
 * the lines are deleted and the rows written in one transaction, so a line is sent in exactly one chain.
 */
async function nextMessage(deps: Deps, mirror: MirrorRow, now: Date): Promise<MirrorDeliveryRow | null> {
  const db = deps.database.db;
  const [open] = await db
    .select()
    .from(mirrorDeliveries)
    .where(and(
      eq(mirrorDeliveries.mirrorId, mirror.id), inArray(mirrorDeliveries.status, ['pending', 'retrying']),
      // a test send is the API's own, sent in its request (never picked up here)
      ne(mirrorDeliveries.kind, 'test'),
      or(isNull(mirrorDeliveries.nextRetryAt), lte(mirrorDeliveries.nextRetryAt, now)),
    ))
    .orderBy(asc(mirrorDeliveries.seq))
    .limit(1);
  if (open) return open;
  return db.transaction(async (tx) => {
    const lines = await tx.select().from(mirrorLines).where(eq(mirrorLines.mirrorId, mirror.id)).orderBy(asc(mirrorLines.seq)).limit(PACK_LINES_MAX).for('update');
    if (lines.length === 0) return null;
    const { bodies, used } = packMessages(mirror.format as MirrorFormat, lines);
    await tx.delete(mirrorLines).where(inArray(mirrorLines.seq, lines.slice(0, used).map((l) => l.seq)));
    const rows = bodies.map((body) => {
      const id = newId('mirrorDelivery');
      return { id, chainId: id, accountId: mirror.accountId, mirrorId: mirror.id, kind: 'lines', attempt: 1, status: 'pending', body, lineCount: used, createdAt: now };
    });
    const written = await tx.insert(mirrorDeliveries).values(rows).returning();
    return written.sort((a, b) => a.seq - b.seq)[0];
  });
}

/**
 * One send on the wire and its record: the URL guard runs again (the name's answer at most
 * RESOLUTION_REUSE_MS old, every address public), the stored body is POSTed with MIRROR_HEADERS, the answer is recorded (the webhook
 * transitions) and the mirror's pace set. A 429 is the receiver's pace, not a failure: the send
 * stays open and waits for its Retry-After (or Discord's `retry_after`). Answers the row as
 * recorded, when the mirror may send next, and the reason it was disabled, if it was.
 */
export async function deliverMirrorMessage(
  deps: Deps,
  transport: WebhookTransport,
  mirror: MirrorRow,
  row: MirrorDeliveryRow,
): Promise<{ delivery: MirrorDeliveryRow; nextSendAt: Date; disabled: MirrorDisabledReason | null }> {
  const sent = await sendBody(deps, transport, mirror.url, row.body);
  const now = deps.now();
  const paced = new Date(now.getTime() + deps.config.mirrorMinIntervalMs);
  const db = deps.database.db;

  if (sent.status === 429) {
    const wait = retryAfterMs(sent.answer, now);
    const error = `rate limited by the receiver (429): waiting ${Math.ceil(wait / 1000)} s`;
    // A test is answered now and never waits; a mirrored message is sent again once the wait is over.
    const status = row.kind === 'test' ? 'failed' : row.status;
    const [delivery] = await db
      .update(mirrorDeliveries)
      .set({ status, responseStatus: 429, latencyMs: sent.latencyMs, error, ...(row.kind === 'test' ? { attemptedAt: now } : {}) })
      .where(eq(mirrorDeliveries.id, row.id))
      .returning();
    return { delivery, nextSendAt: new Date(Math.max(paced.getTime(), now.getTime() + wait)), disabled: null };
  }

  const ok = isSuccess(sent.status);
  const error = answerError(sent.status, sent.error);
  let disable: MirrorDisabledReason | null = null;
  if (!ok && sent.status === 410 && mirror.enabled) disable = 'gone';
  else if (!ok && failingAfter(mirror, now)) disable = 'failing';
  let status: string;
  let retryAt: Date | null = null;
  if (ok) status = 'delivered';
  else if (row.kind === 'test') status = 'failed';
  else if (disable) status = 'dead';
  else {
    const delay = retryDelayAfter(deps.config, row.attempt);
    if (delay === null) status = 'dead';
    else {
      status = 'failed';
      retryAt = new Date(now.getTime() + delay);
    }
  }
  const result = await db.transaction(async (tx) => {
    const [delivery] = await tx
      .update(mirrorDeliveries)
      .set({ status, responseStatus: sent.status, latencyMs: sent.latencyMs, error, attemptedAt: now, nextRetryAt: null })
      .where(eq(mirrorDeliveries.id, row.id))
      .returning();
    if (retryAt) {
      await tx.insert(mirrorDeliveries).values({
        id: newId('mirrorDelivery'), chainId: row.chainId, accountId: row.accountId, mirrorId: row.mirrorId, kind: row.kind,
        attempt: row.attempt + 1, status: 'retrying', body: row.body, lineCount: row.lineCount, nextRetryAt: retryAt, createdAt: now,
      });
    }
    await tx
      .update(mirrors)
      .set(ok ? { lastSuccessAt: now, failingSince: null } : { lastFailureAt: now, failingSince: sql`COALESCE(${mirrors.failingSince}, ${now})` })
      .where(eq(mirrors.id, mirror.id));
    const disabled = disable ? await autoDisableMirror(tx, mirror.id, disable, now) : false;
    return { delivery, disabled };
  });
  if (result.disabled && disable) await announceMirrorDisabled(deps, mirror, disable);
  return { delivery: result.delivery, nextSendAt: paced, disabled: result.disabled ? disable : null };
}

/** The URL guard, then the POST; a refused URL is a failed send with the guard's reason and nothing on the wire. */
async function sendBody(deps: Deps, transport: WebhookTransport, url: string, body: string): Promise<Omit<PostResult, 'latencyMs'> & { latencyMs: number | null }> {
  let target;
  try {
    target = await vetWebhookUrl(url, { allowedHosts: deps.config.webhookAllowedHosts });
  } catch (err) {
    if (err instanceof AppError) return { status: null, latencyMs: null, error: `url refused: ${String(err.extras.reason ?? 'invalid_url')}` };
    throw err;
  }
  return transport.post(target, { ...MIRROR_HEADERS }, body, { readAnswer: true });
}

/**
 * Tells of a mirror disabled automatically: a log line, and the account's owners and admins
 * notified (`mirror.disabled`, with the URL's origin only: its path holds the other tool's
 * token). A failed notice is logged, never thrown: the disabling stands.
 */
export async function announceMirrorDisabled(deps: Deps, mirror: Pick<MirrorRow, 'id' | 'accountId' | 'url'>, reason: MirrorDisabledReason): Promise<void> {
  deps.logger.warn('mirror disabled', { account_id: mirror.accountId, mirror_id: mirror.id, reason });
  await notifyAccountAdmins(deps, { accountId: mirror.accountId, kind: 'mirror.disabled', data: { mirror_id: mirror.id, url_origin: urlOrigin(mirror.url), reason } })
    .catch((err: Error) => deps.logger.error('notifying a disabled mirror failed', { mirror_id: mirror.id, error: err.message }));
}

/** Disables an enabled mirror automatically and drops what waits; true when this call disabled it. */
export async function autoDisableMirror(tx: Executor, mirrorId: string, reason: MirrorDisabledReason, now: Date): Promise<boolean> {
  const rows = await tx
    .update(mirrors)
    .set({ enabled: false, disabledReason: reason, disabledAt: now, updatedAt: now })
    .where(and(eq(mirrors.id, mirrorId), eq(mirrors.enabled, true), isNull(mirrors.deletedAt)))
    .returning({ id: mirrors.id });
  if (rows.length === 0) return false;
  await dropQueued(tx, mirrorId, `dropped: mirror disabled (${reason})`);
  return true;
}
