import type { Deps } from '../../context';
import { failingAfter, isSlow, recordHealth, autoDisable, type AutoDisableReason } from './health';
import { acquireInFlightSlot, type Lease } from './in-flight';
import { notifyEndpointDisabled } from './notify';
import { ACCOUNT_INACTIVE_RECHECK_MS, claimMs, retryDelayAfter } from './schedule';
import { answerError, isSuccess, sendDelivery, type SendResult } from './send';
import {
  claimDelivery, closeAttempt, closeDelivered, closeWithoutAttempt, deferForUnits, deliveredQuickly, insertRetry, loadDeliveryContext, OPEN_STATUSES,
  type DeliveryContext, type DeliveryStatus,
} from './store';
import type { WebhookTransport } from './transport';
import { chargeDeliveryUnits } from './units';

/**
 * One attempt of one delivery row, from the claim to the recorded transition. Used by the
 * worker (event deliveries and their retries) and by the API (test events and replays, sent
 * now). The caller turns `wait` into a delayed job; `done.next` is the retry row to schedule.
 */
export type AttemptOutcome =
  | { kind: 'done'; deliveryId: string; status: DeliveryStatus; responseStatus: number | null; latencyMs: number | null; error: string | null; next: { id: string; at: Date } | null; nextRetryAt: Date | null }
  | { kind: 'wait'; until: Date; reason: 'not_due' | 'claimed' | 'account_inactive' | 'in_flight_cap' | 'call_units_spent' }
  | { kind: 'skip'; reason: 'missing' | 'closed' };

export interface AttemptOptions {
  /** how long to wait for one of the account's in-flight slots before answering `wait` (API: a few seconds; worker: 0) */
  slotWaitMs?: number;
}

/** A short, jittered pause before trying for an in-flight slot again. */
function slotRetryMs(): number {
  return 50 + Math.floor(Math.random() * 150);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function takeSlot(deps: Deps, accountId: string, leaseMs: number, waitMs: number): Promise<Lease | null> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    const lease = await acquireInFlightSlot(deps, accountId, leaseMs);
    if (lease || Date.now() >= deadline) return lease;
    await sleep(Math.min(slotRetryMs(), Math.max(1, deadline - Date.now())));
  }
}

export async function runDeliveryAttempt(deps: Deps, transport: WebhookTransport, deliveryId: string, options: AttemptOptions = {}): Promise<AttemptOutcome> {
  const db = deps.database.db;
  const now = deps.now();
  const ctx = await loadDeliveryContext(db, deliveryId);
  if (!ctx) return { kind: 'skip', reason: 'missing' };
  const { row, endpoint, account } = ctx;
  if (!OPEN_STATUSES.includes(row.status as DeliveryStatus)) return { kind: 'skip', reason: 'closed' };
  if (row.nextRetryAt && row.nextRetryAt > now) return { kind: 'wait', until: row.nextRetryAt, reason: 'not_due' };
  if (row.claimedUntil && row.claimedUntil >= now) return { kind: 'wait', until: new Date(row.claimedUntil.getTime() + 1), reason: 'claimed' };

  // An event delivery whose endpoint was disabled or deleted since fan-out is never sent;
  // tests and replays are explicit requests and go to a disabled endpoint too, except one
  // awaiting enable (its URL, set by a credential, is not vetted yet: manual.ts).
  const unvetted = !endpoint.enabled && endpoint.disabledReason === 'awaiting_enable';
  const gone = endpoint.deletedAt !== null ? 'endpoint deleted' : (row.kind === 'event' || unvetted) && !endpoint.enabled ? `endpoint disabled (${endpoint.disabledReason ?? 'manual'})` : null;
  if (gone) {
    await closeWithoutAttempt(db, row.id, `dropped: ${gone}`, now);
    return done(row.id, 'dead', null, null, `dropped: ${gone}`, null);
  }
  // Read-only or suspended account: deliveries wait (nothing is dropped) and are looked at again later.
  if (account.state !== 'active') return { kind: 'wait', until: new Date(now.getTime() + ACCOUNT_INACTIVE_RECHECK_MS), reason: 'account_inactive' };

  const holdMs = claimMs(deps.config);
  const lease = await takeSlot(deps, account.id, holdMs, options.slotWaitMs ?? 0);
  if (!lease) return { kind: 'wait', until: new Date(now.getTime() + slotRetryMs()), reason: 'in_flight_cap' };
  try {
    const claimAt = deps.now();
    const claim = new Date(claimAt.getTime() + holdMs);
    const claimed = await claimDelivery(db, row, claimAt, claim);
    if (!claimed) return { kind: 'wait', until: new Date(claimAt.getTime() + 500), reason: 'claimed' };
    const current: DeliveryContext = { ...ctx, row: claimed };

    const [units] = await chargeDeliveryUnits(deps, [{ accountId: account.id, plan: account.plan, seatUserId: endpoint.createdByUserId, units: 1 }]);
    if (!units.allowed) {
      // A test event answers now and is never retried; everything else waits for the reset.
      if (row.kind === 'test') return await recordAttempt(deps, current, claim, { status: null, latencyMs: null, error: 'call units spent: the seat of the endpoint\'s creator has no units left today' }, false);
      await deferForUnits(db, row.id, claim, units.resetsAt!);
      return { kind: 'wait', until: units.resetsAt!, reason: 'call_units_spent' };
    }
    const sent = await sendDelivery(deps.config, transport, current, deps.now());
    return await recordAttempt(deps, current, claim, sent, true);
  } finally {
    await lease.release();
  }
}

function done(deliveryId: string, status: DeliveryStatus, responseStatus: number | null, latencyMs: number | null, error: string | null, next: { id: string; at: Date } | null): AttemptOutcome {
  return { kind: 'done', deliveryId, status, responseStatus, latencyMs, error, next, nextRetryAt: next?.at ?? null };
}

/**
 * Records the attempt and its transition in one transaction (spec: Delivery transitions):
 * 2xx → delivered; a test event that fails → failed; a replay that fails → dead (a replay is
 * one attempt); an event delivery that fails → failed plus the next row `retrying`, or dead
 * when the schedule is spent; a 410 or the `failing` rule disables the endpoint → dead.
 */
export async function recordAttempt(deps: Deps, ctx: DeliveryContext, claim: Date, sent: SendResult, receiverAnswered: boolean): Promise<AttemptOutcome> {
  const { row, endpoint } = ctx;
  const now = deps.now();
  const ok = isSuccess(sent.status);
  const error = answerError(sent.status, sent.error);
  let disable: AutoDisableReason | null = null;
  if (!ok && receiverAnswered && sent.status === 410 && endpoint.enabled) disable = 'gone';
  else if (!ok && receiverAnswered && failingAfter(endpoint, now)) disable = 'failing';

  let status: DeliveryStatus;
  let retryAt: Date | null = null;
  if (ok) status = 'delivered';
  else if (row.kind === 'test') status = 'failed';
  else if (row.kind === 'replay' || disable) status = 'dead';
  else {
    const delay = retryDelayAfter(deps.config, row.attempt);
    if (delay === null) status = 'dead';
    else {
      status = 'failed';
      retryAt = new Date(now.getTime() + delay);
    }
  }

  // The common case, delivered within the slow bar: no retry row, no disabling, no slow check
  // (isSlow needs a latency above the bar): one statement instead of a transaction.
  if (receiverAnswered && deliveredQuickly(sent)) {
    const closed = await closeDelivered(deps.database.db, { now, rows: [{ deliveryId: row.id, claim, responseStatus: sent.status, latencyMs: sent.latencyMs }] });
    if (!closed.has(row.id)) return { kind: 'skip', reason: 'closed' };
    observeAttempt(deps, row, status, sent.latencyMs, now);
    return done(row.id, status, sent.status, sent.latencyMs, error, null);
  }
  const result = await deps.database.db.transaction(async (tx) => {
    const closed = await closeAttempt(tx, { deliveryId: row.id, claim, status: status as 'delivered', responseStatus: sent.status, latencyMs: sent.latencyMs, error, now });
    if (!closed) return null;
    const next = retryAt ? { id: await insertRetry(tx, row, retryAt), at: retryAt } : null;
    if (receiverAnswered) await recordHealth(tx, endpoint.id, ok, now);
    if (!disable && endpoint.enabled && (await isSlow(tx, endpoint.id, sent.latencyMs))) disable = 'slow';
    const disabled = disable ? await autoDisable(tx, endpoint.id, disable, now) : false;
    return { next: disabled ? null : next, disabled };
  });
  if (!result) return { kind: 'skip', reason: 'closed' };
  observeAttempt(deps, row, status, sent.latencyMs, now);
  if (result.disabled && disable) deps.metrics.endpointsDisabledTotal.inc({ reason: disable });
  if (result.disabled && disable) {
    await notifyEndpointDisabled(deps, { accountId: row.accountId, endpointId: endpoint.id, url: endpoint.url, reason: disable }).catch((err: Error) =>
      deps.logger.error('notifying a disabled endpoint failed', { endpoint_id: endpoint.id, error: err.message }));
  }
  return done(row.id, status, sent.status, sent.latencyMs, error, result.next);
}

/** Metrics of one recorded attempt; end-to-end latency only for real events delivered (not tests or replays). */
export function observeAttempt(deps: Deps, row: DeliveryContext['row'], status: DeliveryStatus, latencyMs: number | null, answeredAt: Date): void {
  deps.metrics.deliveriesTotal.inc({ outcome: status });
  if (latencyMs !== null) deps.metrics.attemptDurationSeconds.observe({ outcome: status }, latencyMs / 1000);
  if (status === 'delivered' && row.kind === 'event') {
    deps.metrics.endToEndSeconds.observe(Math.max(0, answeredAt.getTime() - row.eventCreatedAt.getTime()) / 1000);
  }
}
