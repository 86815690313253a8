import { CLAIM_AHEAD_FRESH_MS, type ClaimsAhead, type HeldClaim } from './claims-ahead';
import { Coalescer, GATHER_MS } from './coalesce';
import { acquireInFlightSlot, type Lease } from './in-flight';
import { answerError, isSuccess, prepareEndpoint, sendPrepared, type PreparedEndpoint, type SendResult } from './send';
import {
  claimAndReadDeliveries, closeAttempt, closeDelivered, closeWithoutAttempt, deferForUnits, deliveredQuickly, insertRetry, loadDeliveryContexts, releaseClaims, retryOnConflict,
} from './store';
import type { WebhookTransport } from './transport';
import { chargeDeliveryUnits, type DeliveryCharge } from './units';
import {
  ACCOUNT_INACTIVE_RECHECK_MS, ENABLE_TEST_RECHECK_MS, OPEN_STATUSES, announceAutoDisabled, autoDisable, claimMs, failingAfter, isSlow, recordHealth, redisAvailability, retryDelayAfter,
  type AutoDisableReason, type DeliveryContext, type DeliveryStatus, type Deps,
} from '@teamchat/core';
import type { Executor } from '@teamchat/db';

/**
 * THE attempt pipeline (docs/webhooks.md "The delivery engine"): for N delivery rows, each
 * already holding one in-flight slot of its account,
 *
 *   claim (claim the open, due rows and read them as they are now in one statement, judge each with
 *   `eligibility` as the claim's holder; a row that must not go is closed or gives its claim back)
 *   → charge (one call unit per attempt on the seat of the endpoint's creator)
 *   → prepare (URL guard, secrets: once per endpoint) → send (sign, POST) → record.
 *
 * A single attempt (a test event, a replay, a retry) is a pipeline of one row; the dispatcher
 * runs it over as many rows as got slots together. Every round trip before the send is taken
 * once for all the rows; after it, each row goes on by itself: a row's outcome settles when its
 * own answer is recorded, never waiting for another row's answer (a hanging receiver holds only
 * its own row). Quick 2xx answers are closed together (Coalescer): those read in one turn of the
 * event loop, and whatever arrives while a close is under way. In the dispatcher's pipelines,
 * whose quick 2xx rows have their slots back before they are recorded, a close also gathers for
 * GATHER_MS first: nobody waits for it, and it is past the receiver's arrival.
 */
export type AttemptOutcome =
  | { kind: 'done'; deliveryId: string; status: DeliveryStatus; responseStatus: number | null; latencyMs: number | null; error: string | null; next: { id: string; accountId: string; at: Date } | null; nextRetryAt: Date | null }
  | { kind: 'wait'; deliveryId: string; until: Date; reason: 'not_due' | 'claimed' | 'account_inactive' | 'enable_test' | 'call_units_spent' | 'in_flight_cap' | 'slots_unavailable' | 'units_unavailable' }
  | { kind: 'skip'; deliveryId: string; reason: 'missing' | 'closed' };

/** What the rules say about sending a row now (ONE function: every path judges rows with it). */
export type Eligibility =
  | { kind: 'send' }
  | { kind: 'drop'; error: string }
  | { kind: 'wait'; until: Date; reason: 'not_due' | 'claimed' | 'account_inactive' | 'enable_test' }
  | { kind: 'skip'; reason: 'missing' | 'closed' };

export function eligibility(
  ctx: DeliveryContext | undefined,
  now: Date,
  /** the claim the caller holds on the row, if it claimed it (a row under that claim is its own to send) */
  held?: Date,
): Eligibility {
  if (!ctx) return { kind: 'skip', reason: 'missing' };
  const { row, endpoint, account } = ctx;
  if (!OPEN_STATUSES.includes(row.status as DeliveryStatus)) return { kind: 'skip', reason: 'closed' };
  if (row.nextRetryAt && row.nextRetryAt > now) return { kind: 'wait', until: row.nextRetryAt, reason: 'not_due' };
  if (row.claimedUntil && row.claimedUntil >= now && row.claimedUntil.getTime() !== held?.getTime()) return { kind: 'wait', until: new Date(row.claimedUntil.getTime() + 1), reason: 'claimed' };
  // An event delivery whose endpoint was disabled or deleted since fan-out is never sent; tests
  // and replays are explicit requests and go to a disabled endpoint too, except one awaiting
  // enable (its URL, set by a credential, is not vetted yet: manual.ts).
  const unvetted = !endpoint.enabled && endpoint.disabledReason === 'awaiting_enable';
  if (endpoint.deletedAt !== null) return { kind: 'drop', error: 'dropped: endpoint deleted' };
  if ((row.kind === 'event' || unvetted) && !endpoint.enabled) return { kind: 'drop', error: `dropped: endpoint disabled (${endpoint.disabledReason ?? 'manual'})` };
  // Read-only or suspended account: deliveries wait (nothing is dropped) and are looked at again later.
  if (account.state !== 'active') return { kind: 'wait', until: new Date(now.getTime() + ACCOUNT_INACTIVE_RECHECK_MS), reason: 'account_inactive' };
  // Enabling delivers its test event first (spec: Delivery behaviour 6): the endpoint's event
  // deliveries wait while the enable's test is under way (docs/webhooks.md "Enabling delivers a
  // test event first"); tests and replays are explicit requests and go.
  if (row.kind === 'event' && endpoint.enableTestUntil !== null && endpoint.enableTestUntil > now) {
    return { kind: 'wait', until: new Date(Math.min(endpoint.enableTestUntil.getTime(), now.getTime() + ENABLE_TEST_RECHECK_MS)), reason: 'enable_test' };
  }
  return { kind: 'send' };
}

/**
 * Runs the pipeline over `ids` (each holding a slot of its account): one promise per id, in
 * order, each settling with that row's outcome. Rejects only when a shared stage fails before
 * any send (database or Redis away): then nothing was sent, and a row claimed here gets its
 * claim back (or keeps it until it lapses if that fails too); the sweep finds it again.
 */
export async function runPipeline(
  deps: Deps,
  transport: WebhookTransport,
  ids: readonly string[],
  /**
   * called with a row's index once a quick 2xx answer is in, before it is recorded (by the
   * shared one-statement close): its attempt is off the wire. Not called for any other outcome,
   * whose record (its own transaction) still counts against the row's slot.
   */
  onQuickSuccess?: (index: number) => void,
  /**
   * the dispatcher's rows claimed ahead (ClaimsAhead): rows of `ids` found there are sent on
   * their claim's read while it is fresh, and the rows of `next` (none of them in `ids`) are
   * claimed ahead, in the claim statement of `ids` when it runs, else in one of their own that
   * the sends do not wait for
   */
  ahead?: { claims: ClaimsAhead; next: ReadonlyArray<{ id: string; accountId: string }> },
): Promise<Array<Promise<AttemptOutcome>>> {
  const db = deps.database.db;
  const out: Array<Promise<AttemptOutcome>> = new Array(ids.length);

  // Claim: the rows claimed until one attempt's claim time and read as they are now (the
  // endpoint re-read right before the send), in one statement, then judged with the one rule as
  // the claim's holder. A row the statement did not claim (closed, not due, under another claim,
  // missing) is read as it is and judged for its outcome. A row claimed ahead is judged on its
  // claim's read if that is fresh; an older one gives its claim back and is claimed again here.
  const claimAt = deps.now();
  const claim = new Date(claimAt.getTime() + claimMs(deps.config));
  // The rows to claim ahead are registered before anything is awaited: a pipeline started
  // meanwhile must not pick them too (two claims of one row, one of them held by nobody).
  const next = ahead?.next.map((r) => r.id) ?? [];
  const nextClaimed = next.length > 0 ? holdAhead(ahead!, claim) : null;
  let claimed = new Map<string, DeliveryContext>();
  let held = new Map<string, HeldClaim>();
  let toClaim: readonly string[];
  let claimingNext: Promise<void> | null = null;
  let unclaimed = new Map<string, DeliveryContext>();
  try {
    held = await heldClaims(db, ahead?.claims, ids, Date.now());
    toClaim = ids.filter((id) => !held.has(id));
    if (toClaim.length > 0) {
      claimed = await claimAndReadDeliveries(db, [...toClaim, ...next], claimAt, claim);
      nextClaimed?.settle(claimed);
    } else if (nextClaimed) {
      // Every row of this pipeline was claimed ahead: the next ones are claimed while these go.
      claimingNext = claimAndReadDeliveries(db, next, claimAt, claim).then(nextClaimed.settle, (err: Error) => {
        nextClaimed.settle(new Map());
        deps.logger.warn('claiming rows ahead failed; they are claimed when their slots come', { rows: next.length, error: err.message });
      });
    }
    const others = toClaim.filter((id) => !claimed.has(id));
    if (others.length > 0) unclaimed = await loadDeliveryContexts(db, others);
  } catch (err) {
    // Nothing is sent: the rows of `ids` this pipeline holds claims of (claimed ahead, or by its
    // own statement) get them back, for the next attempt to take at once rather than after the
    // claim time. (Rows of `next` it claimed are held ahead, as they would be had it gone on.)
    const mineClaimed = ids.flatMap((id) => (claimed.has(id) ? [{ ctx: claimed.get(id)!, claim }] : []));
    await giveBack(db, [...held.values(), ...mineClaimed]).catch(() => undefined);
    throw err;
  } finally {
    // A stage that failed before the claim statement, or a statement that failed: nothing of `next` is claimed.
    if (!claimingNext) nextClaimed?.settle(new Map());
  }
  const mine: Mine[] = [];
  ids.forEach((id, i) => {
    const h = held.get(id);
    const ctx = h?.ctx ?? claimed.get(id);
    const rowClaim = h?.claim ?? claim;
    const verdict = eligibility(ctx ?? unclaimed.get(id), claimAt, ctx ? rowClaim : undefined);
    if (verdict.kind === 'send' && ctx) mine.push({ i, ctx, claim: rowClaim });
    // Claimable only now (its claim lapsed, or it fell due, between the two statements): next time.
    else if (verdict.kind === 'send' || (verdict.kind === 'drop' && !ctx)) out[i] = Promise.resolve({ kind: 'wait', deliveryId: id, until: new Date(claimAt.getTime() + 500), reason: 'claimed' });
    else if (verdict.kind === 'drop') out[i] = closeWithoutAttempt(db, id, verdict.error, rowClaim).then((closed) => (closed ? done(id, 'dead', null, null, verdict.error, null) : skip(id)));
    else {
      const outcome: AttemptOutcome = verdict.kind === 'wait'
        ? { kind: 'wait', deliveryId: id, until: verdict.until, reason: verdict.reason }
        : { kind: 'skip', deliveryId: id, reason: verdict.reason };
      // A claimed row that waits (its account is not active, its endpoint's enable test is under way) gives its claim back.
      out[i] = ctx ? releaseClaims(db, [id], rowClaim).then(() => outcome) : Promise.resolve(outcome);
    }
  });
  if (mine.length === 0) return out;

  // Charge: one call unit per attempt on the seat of the endpoint's creator, each seat at once.
  let charged: Mine[];
  try {
    charged = await charge(deps, mine, out);
  } catch (err) {
    await giveBack(db, mine).catch(() => undefined);
    throw new UnitsUnavailable(err);
  }

  // Prepare (once per endpoint), send, record: each row on its own from here.
  const prepared = new Map<string, Promise<PreparedEndpoint>>();
  const sendAt = deps.now();
  for (const { i, ctx, claim: rowClaim } of charged) {
    let sentAt = 0;
    let p = prepared.get(ctx.endpoint.id);
    if (!p) {
      p = prepareEndpoint(deps.config, ctx.endpoint, sendAt);
      prepared.set(ctx.endpoint.id, p);
    }
    out[i] = p
      .then((ready) => {
        sentAt = Date.now();
        return sendPrepared(transport, ctx, ready, sendAt);
      })
      .catch((err: Error): SendResult => ({ status: null, latencyMs: null, error: `attempt failed: ${err.message}` }))
      .then(async (sent) => {
        const answeredAt = Date.now();
        if (onQuickSuccess && deliveredQuickly(sent)) onQuickSuccess(i);
        const outcome = await record(deps, ctx, rowClaim, sent, { gathered: onQuickSuccess !== undefined });
        if (ctx.row.kind === 'event' && ctx.row.attempt === 1 && sentAt > 0) observeStages(deps, ctx.row.createdAt, sentAt, answeredAt);
        return outcome;
      });
  }
  return out;
}

/**
 * The charge stage could not reach the unit counters (Redis away, or refusing writes): nothing
 * was sent and the rows' claims were given back. The engine meets it as any failed pipeline;
 * a single attempt (attemptOne) answers it as a wait.
 */
export class UnitsUnavailable extends Error {
  constructor(cause: unknown) {
    super(`call units could not be charged: ${(cause as Error)?.message ?? String(cause)}`, { cause });
  }
}

/** A row the pipeline holds the claim of and will send: its index in `ids`, its read, its claim. */
type Mine = { i: number; ctx: DeliveryContext; claim: Date };

/**
 * The rows of `ids` claimed ahead whose reads are fresh (CLAIM_AHEAD_FRESH_MS), taken out of
 * `claims`. The older ones give their claims back (one statement per claim) and are claimed
 * again with the rest.
 */
async function heldClaims(db: Executor, claims: ClaimsAhead | undefined, ids: readonly string[], now: number): Promise<Map<string, HeldClaim>> {
  const fresh = new Map<string, HeldClaim>();
  if (!claims) return fresh;
  const pending = ids.map((id) => claims.take(id)).filter((p): p is Promise<HeldClaim | undefined> => p !== undefined);
  if (pending.length === 0) return fresh;
  const stale: HeldClaim[] = [];
  for (const h of await Promise.all(pending)) {
    if (!h) continue;
    if (now - h.at <= CLAIM_AHEAD_FRESH_MS) fresh.set(h.ctx.row.id, h);
    else stale.push(h);
  }
  try {
    await giveBack(db, stale);
  } catch (err) {
    // The pipeline fails before any send: the fresh claims go back too (see runPipeline).
    await giveBack(db, [...fresh.values()]).catch(() => undefined);
    throw err;
  }
  return fresh;
}

/**
 * Registers the rows of `ahead.next` as claimed ahead under `claim`, before their statement runs;
 * `settle` gives them the statement's rows (the first call counts): a row it did not claim is
 * held by no one.
 */
function holdAhead(ahead: NonNullable<Parameters<typeof runPipeline>[4]>, claim: Date): { settle: (rows: Map<string, DeliveryContext>) => void } {
  let settle!: (rows: Map<string, DeliveryContext>) => void;
  const settled = new Promise<{ rows: Map<string, DeliveryContext>; at: number }>((resolve) => {
    settle = (rows) => resolve({ rows, at: Date.now() });
  });
  for (const { id, accountId } of ahead.next) {
    ahead.claims.add(id, accountId, settled.then(({ rows, at }) => {
      const ctx = rows.get(id);
      return ctx ? { ctx, claim, at } : undefined;
    }));
  }
  return { settle };
}

/** Gives the claims of rows that will not be sent now back (grouped by claim: one statement each). */
export async function giveBack(db: Executor, rows: ReadonlyArray<{ ctx: DeliveryContext; claim: Date }>): Promise<void> {
  const byClaim = new Map<number, string[]>();
  for (const r of rows) {
    const group = byClaim.get(r.claim.getTime());
    if (group) group.push(r.ctx.row.id);
    else byClaim.set(r.claim.getTime(), [r.ctx.row.id]);
  }
  await Promise.all([...byClaim].map(([at, ids]) => releaseClaims(db, ids, new Date(at))));
}

/** The charge stage: the rows whose seats had units; the others' outcomes are written into `out`. */
async function charge(deps: Deps, rows: Mine[], out: Array<Promise<AttemptOutcome>>) {
  const seats = new Map<string, typeof rows>();
  for (const r of rows) {
    const key = `${r.ctx.account.id}|${r.ctx.endpoint.createdByUserId}`;
    const group = seats.get(key);
    if (group) group.push(r);
    else seats.set(key, [r]);
  }
  const groups = [...seats.values()];
  const charges: DeliveryCharge[] = groups.map((g) => ({ accountId: g[0].ctx.account.id, plan: g[0].ctx.account.plan, seatUserId: g[0].ctx.endpoint.createdByUserId, units: g.length }));
  const verdicts = await chargeDeliveryUnits(deps, charges);
  const allowed: typeof rows = [];
  groups.forEach((g, n) => {
    // A seat's first `granted` rows (the order they came in) go; the rest wait for the reset.
    const { granted, resetsAt } = verdicts[n];
    allowed.push(...g.slice(0, granted));
    if (granted === g.length) return;
    for (const { i, ctx, claim } of g.slice(granted)) {
      // A test event answers now and is never retried; everything else waits for the reset.
      if (ctx.row.kind === 'test') out[i] = record(deps, ctx, claim, { status: null, latencyMs: null, error: 'call units spent: the seat of the endpoint\'s creator has no units left today' }, { receiverAnswered: false });
      else out[i] = deferForUnits(deps.database.db, ctx.row.id, claim, resetsAt!).then((): AttemptOutcome => ({ kind: 'wait', deliveryId: ctx.row.id, until: resetsAt!, reason: 'call_units_spent' }));
    }
  });
  return allowed;
}

/**
 * A pipeline of one row, outside the dispatcher (test events and replays, sent in the API's
 * request): it takes its own in-flight slot of the account, waiting up to `slotWaitMs` for one
 * (answering `wait`, reason in_flight_cap, if none came; slots_unavailable while Redis is away),
 * then runs the pipeline (answering `wait`, reason units_unavailable, when its unit could not be
 * charged: the units live in Redis too).
 */
export async function attemptOne(deps: Deps, transport: WebhookTransport, deliveryId: string, slotWaitMs: number): Promise<AttemptOutcome> {
  const head = await loadDeliveryContexts(deps.database.db, [deliveryId]);
  const ctx = head.get(deliveryId);
  const verdict = eligibility(ctx, deps.now());
  // Judged again by the pipeline under the slot; judged here so a row that will not be sent waits for no slot.
  if (verdict.kind !== 'send' || !ctx) return (await runPipeline(deps, transport, [deliveryId]))[0];
  // The slots live in Redis: while it is away nothing is sent (the cap holds across processes),
  // and the row waits, open, for the engine once Redis is back (docs/limits.md "When Redis is
  // away"). Redis known to be away (a call of this process failed within the limits' pause) is
  // not tried: a frozen Redis would cost the request another command timeout.
  const redisAway = (reason: 'slots_unavailable' | 'units_unavailable'): AttemptOutcome =>
    ({ kind: 'wait', deliveryId, until: new Date(deps.now().getTime() + REDIS_AWAY_RETRY_MS), reason });
  const availability = redisAvailability(deps.redis);
  if (!availability.usable()) return redisAway('slots_unavailable');
  let lease: Lease | null;
  try {
    lease = await takeSlot(deps, ctx.account.id, slotWaitMs);
  } catch (err) {
    availability.failed();
    deps.logger.warn('no in-flight slot could be taken: Redis unavailable; the delivery waits', { delivery_id: deliveryId, error: (err as Error).message });
    return redisAway('slots_unavailable');
  }
  if (!lease) return { kind: 'wait', deliveryId, until: new Date(deps.now().getTime() + slotRetryMs()), reason: 'in_flight_cap' };
  try {
    return await (await runPipeline(deps, transport, [deliveryId]))[0];
  } catch (err) {
    if (!(err instanceof UnitsUnavailable)) throw err;
    availability.failed();
    deps.logger.warn('the call unit could not be charged: Redis unavailable; the delivery waits', { delivery_id: deliveryId, error: (err.cause as Error)?.message });
    return redisAway('units_unavailable');
  } finally {
    await lease.release().catch(() => undefined);
  }
}

/** A row that found Redis away (no slot, or no unit charged) is looked at again after this long (the sweep finds it too). */
const REDIS_AWAY_RETRY_MS = 5_000;

/** A short, jittered pause before trying for an in-flight slot again. */
function slotRetryMs(): number {
  return 50 + Math.floor(Math.random() * 150);
}

async function takeSlot(deps: Deps, accountId: string, waitMs: number): Promise<Lease | null> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    const lease = await acquireInFlightSlot(deps, accountId, claimMs(deps.config));
    if (lease || Date.now() >= deadline) return lease;
    await new Promise((r) => setTimeout(r, Math.min(slotRetryMs(), Math.max(1, deadline - Date.now()))));
  }
}

function done(deliveryId: string, status: DeliveryStatus, responseStatus: number | null, latencyMs: number | null, error: string | null, next: { id: string; accountId: string; at: Date } | null): AttemptOutcome {
  return { kind: 'done', deliveryId, status, responseStatus, latencyMs, error, next, nextRetryAt: next?.at ?? null };
}

function skip(deliveryId: string): AttemptOutcome {
  return { kind: 'skip', deliveryId, reason: 'closed' };
}

type Closer = Coalescer<{ deliveryId: string; createdAt: Date; claim: Date; responseStatus: number; latencyMs: number; attemptedAt: Date }, boolean>;

/**
 * Quick 2xx answers closed together: those read in one turn of the event loop, and whatever
 * arrives while a close is under way goes in the next one. Per database, two closers: one for
 * closes a caller waits for (a test event's answer, a replay), one that gathers for GATHER_MS
 * (the dispatcher's rows, whose slots are back already).
 */
const closers = new WeakMap<object, { now: Closer; gathered: Closer }>();

function closerFor(deps: Deps, gathered: boolean): Closer {
  let c = closers.get(deps.database);
  if (!c) {
    const close = async (rows: Parameters<Closer['add']>[0][]) => {
      const closed = await closeDelivered(deps.database.db, { rows });
      return rows.map((r) => closed.has(r.deliveryId));
    };
    c = { now: new Coalescer(close), gathered: new Coalescer(close, { gatherMs: GATHER_MS }) };
    closers.set(deps.database, c);
  }
  return gathered ? c.gathered : c.now;
}

/**
 * The record stage: the attempt and its transition (spec: Delivery transitions): 2xx →
 * delivered; a test event that fails → failed; a replay that fails → dead (a replay is one
 * attempt); an event delivery that fails → failed plus the next row `retrying`, or dead when the
 * schedule is spent; a 410 or the `failing` rule disables the endpoint → dead. Every write is
 * fenced on the row's claim: a row dropped or taken over meanwhile records nothing (`skip`).
 */
export async function record(
  deps: Deps,
  ctx: DeliveryContext,
  claim: Date,
  sent: SendResult,
  options: {
    /** false: no answer was awaited (nothing sent): no health sample */
    receiverAnswered?: boolean;
    /** a quick 2xx's close nobody waits for (the dispatcher's rows): it gathers for GATHER_MS */
    gathered?: boolean;
  } = {},
): Promise<AttemptOutcome> {
  const { row, endpoint } = ctx;
  const receiverAnswered = options.receiverAnswered ?? true;
  // The attempt's time (`attempted_at`, and the end of its end-to-end latency): when its answer
  // is recorded here, not when a shared close runs.
  const now = deps.now();
  // The common case, delivered within the slow bar: no retry row, no disabling, no slow check
  // (isSlow needs a latency above the bar): one statement, shared with other rows answered meanwhile.
  if (receiverAnswered && deliveredQuickly(sent)) {
    const closed = await closerFor(deps, options.gathered ?? false).add({ deliveryId: row.id, createdAt: row.createdAt, claim, responseStatus: sent.status, latencyMs: sent.latencyMs, attemptedAt: now });
    if (!closed) return skip(row.id);
    observeAttempt(deps, row, 'delivered', sent.latencyMs, now);
    return done(row.id, 'delivered', sent.status, sent.latencyMs, null, null);
  }
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
  // The attempt was made: it must be recorded, or its row would be attempted again once its claim
  // lapses. A deadlock (another attempt of the endpoint recording or disabling it, which locks
  // the endpoint and its open rows in the other order) is PostgreSQL choosing a victim, not a
  // verdict: the transaction, atomic and fenced on the claim, is run again.
  const result = await retryOnConflict(() => deps.database.db.transaction(async (tx) => {
    let disabling = disable;
    const closed = await closeAttempt(tx, { deliveryId: row.id, claim, status: status as 'delivered', responseStatus: sent.status, latencyMs: sent.latencyMs, error, now });
    if (!closed) return null;
    const next = retryAt ? { id: await insertRetry(tx, row, retryAt), accountId: row.accountId, at: retryAt } : null;
    if (receiverAnswered) await recordHealth(tx, endpoint.id, ok, now);
    if (!disabling && endpoint.enabled && (await isSlow(tx, endpoint.id, sent.latencyMs))) disabling = 'slow';
    const disabled = disabling ? await autoDisable(tx, endpoint.id, disabling, now) : false;
    return { next: disabled ? null : next, disabled, reason: disabling };
  }));
  if (result) disable = result.reason;
  if (!result) return skip(row.id);
  observeAttempt(deps, row, status, sent.latencyMs, now);
  if (result.disabled && disable) await announceAutoDisabled(deps, { accountId: row.accountId, endpointId: endpoint.id, url: endpoint.url, reason: disable });
  return done(row.id, status, sent.status, sent.latencyMs, error, result.next);
}

/** The dispatch, answer and record stages of an event's first delivery (the relay and fan-out stages are the fan-out job's). */
function observeStages(deps: Deps, writtenAt: Date, sentAt: number, answeredAt: number): void {
  const stage = deps.metrics.deliveryStageSeconds;
  stage.observe({ stage: 'dispatch' }, Math.max(0, sentAt - writtenAt.getTime()) / 1000);
  stage.observe({ stage: 'answer' }, (answeredAt - sentAt) / 1000);
  stage.observe({ stage: 'record' }, (Date.now() - answeredAt) / 1000);
}

/** Metrics of one recorded attempt; end-to-end latency only for real events delivered (not tests or replays). */
export function observeAttempt(deps: Deps, row: DeliveryContext['row'], status: DeliveryStatus, latencyMs: number | null, answeredAt: Date): void {
  deps.metrics.deliveriesTotal.inc({ outcome: status });
  if (latencyMs !== null) deps.metrics.attemptDurationSeconds.observe({ outcome: status }, latencyMs / 1000);
  if (status === 'delivered' && row.kind === 'event') {
    deps.metrics.endToEndSeconds.observe(Math.max(0, answeredAt.getTime() - row.eventCreatedAt.getTime()) / 1000);
  }
}
