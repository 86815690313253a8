import { CLAIM_AHEAD_FRESH_MS, ClaimsAhead, type HeldClaim } from './claims-ahead';
import { Coalescer, GATHER_MS } from './coalesce';
import { acquireInFlightSlots, inFlightLimit, releaseSlots, type Slot } from './in-flight';
import { giveBack, runPipeline, type AttemptOutcome } from './pipeline';
import { loadRowHeads, openRowsOfAccount, type RowHead } from './store';
import type { WebhookTransport } from './transport';
import { claimMs, OPEN_STATUSES, type DeliveryStatus, type Deps } from '@teamchat/core';

/** A delivery row waiting in a process's dispatcher: its id, and whose share it is served from. */
export interface WaitingRow {
  id: string;
  accountId: string;
  endpointId: string;
  /**
   * A send of another kind of target (a channel mirror's message, docs/mirrors.md "Sending"):
   * run on the in-flight slot the dispatcher took for it, in place of the attempt pipeline, its
   * slot given back when it settles. `id` must not be a delivery id; `endpointId` is the target's.
   */
  send?: () => Promise<void>;
}

/**
 * Rows one account may keep waiting in one process. More of that account's rows stay open in the
 * database (nothing is lost); once the lane is half empty it reads the oldest of them again (and
 * the sweep would find them too): a backlog of any size costs memory for this many.
 */
export const MAX_WAITING_PER_ACCOUNT = 1000;
/** Attempts one process keeps on the wire at most; when this binds, accounts take turns. */
export const MAX_IN_FLIGHT = 1024;
/**
 * The share counted for an account this process holds no lane of yet (a lane learns its share
 * from Redis at its first ask): the smallest in-flight cap, so rows claimed at a fan-out's write
 * for it never outnumber the slots it can get at once.
 */
const FIRST_SHARE = inFlightLimit(0);
/**
 * Rows claimed ahead per in-flight slot of an account (ClaimsAhead). Two: a claim's statement
 * made when a slot's attempt starts must be back before the slot comes off the wire, and under
 * load a PostgreSQL round trip took longer than a quick attempt (with one per slot, a slot
 * waited 12-15 ms for its claim at 200 deliveries/s on a loaded 2-core machine; 4-5 ms with two).
 */
export const CLAIMS_AHEAD_PER_SLOT = 2;
/**
 * The slowest 2xx after which an endpoint's rows are claimed ahead: a row claimed ahead waits
 * for up to CLAIMS_AHEAD_PER_SLOT attempts of its slot, and must still be fresh then.
 */
const QUICK_ANSWER_MS = CLAIM_AHEAD_FRESH_MS / CLAIMS_AHEAD_PER_SLOT;
/** Pause before asking again for an account whose slots are all held elsewhere (other processes, the API). */
const NO_SLOT_PAUSE_MS = 25;
/** Pause after Redis refused to answer (slots cannot be counted, so nothing is sent). */
const REDIS_AWAY_PAUSE_MS = 250;
/**
 * How long after it was taken from Redis a slot may be handed on to the account's next row
 * without going back to Redis. Its lease lasts the claim time (answer time + 5 s), so an attempt
 * started within this window ends (answer time) with 3 s to spare for the stages before the send
 * and any skew between this process's clock and Redis's. Past it the slot goes back, so the
 * share between processes is asked for again at least this often.
 */
export const SLOT_HANDOFF_MS = 2_000;
/**
 * How long a slot freed by a quick 2xx, with no row of its account waiting here to hand it to, is
 * KEPT for the account's next row before it goes back to Redis (docs/webhooks.md "In flight per
 * account"). A steady stream of one account (200 posts/s: a row every 5 ms) otherwise gave each
 * slot back after every attempt and asked for it again for the next row: two Redis round trips
 * per delivery, one of them between the fan-out's write and the POST. A kept slot is held, not
 * used: the account has no more attempts on the wire than without it, only the slot's return is
 * later, by this much at most; a test or replay waiting for a slot waits at most this long more.
 * A slot is kept only while its attempt would still start within SLOT_HANDOFF_MS of its grant.
 */
export const SLOT_KEEP_MS = 50;

/** Endpoints remembered by one process at most, per kind (the oldest are forgotten first). */
const ENDPOINTS_REMEMBERED = 10_000;
/**
 * The pause after a failing endpoint's failed attempt before its next probe: PROBE_PAUSE_MS
 * after the first failure, doubling with each failure in a row up to PROBE_PAUSE_MAX_MS. A
 * receiver that answers 500 at once otherwise took probes back to back, ~70 a second, each with
 * its record and retry (docs/webhooks.md "In flight per account"). The ceiling keeps a receiver
 * that comes back found within a second, and a retry due meanwhile waits at most that long.
 */
export const PROBE_PAUSE_MS = 250;
export const PROBE_PAUSE_MAX_MS = 1_000;

/**
 * What the last attempt of each endpoint in this process said about its receiver:
 * - **failing** (an answer other than 2xx, a timeout, a connection error): the endpoint gets one
 *   attempt at a time, a probe, each after its pause (PROBE_PAUSE_MS), until one succeeds
 *   (docs/webhooks.md "In flight per account"). A receiver that fails at once would otherwise
 *   take attempts as fast as its account's slots turn over, each with its record and retry, and
 *   eat into every other account's share of the worker and the database.
 * - **quick** (a 2xx within QUICK_ANSWER_MS): its rows are claimed ahead of their slots
 *   (ClaimsAhead), since its slots come back, CLAIMS_AHEAD_PER_SLOT times over, before such a
 *   claim's read grows old. A receiver that hangs or crawls gets no claims ahead: they would
 *   only grow old and be made again.
 */
class RecentAnswers {
  /** failing endpoints: failures in a row, and no probe before `probeAt` (Date.now()) */
  private readonly failing = new Map<string, { failures: number; probeAt: number }>();
  private readonly quick = new Set<string>();

  isFailing(endpointId: string): boolean {
    return this.failing.has(endpointId);
  }

  /** When a failing endpoint's next probe may start (0: now, or the endpoint is not failing). */
  probeAt(endpointId: string): number {
    return this.failing.get(endpointId)?.probeAt ?? 0;
  }

  /** Whether any endpoint is failing here (else no probe is paused, and nothing need be looked up). */
  anyFailing(): boolean {
    return this.failing.size > 0;
  }

  isQuick(endpointId: string): boolean {
    return this.quick.has(endpointId);
  }

  /** Notes an attempt's outcome: a 2xx ends the endpoint's probing, a failed attempt starts it. */
  note(endpointId: string, outcome: AttemptOutcome): void {
    if (outcome.kind !== 'done') return;
    if (outcome.status === 'delivered') {
      this.failing.delete(endpointId);
      if (outcome.latencyMs !== null && outcome.latencyMs <= QUICK_ANSWER_MS) remember(this.quick, endpointId);
      else this.quick.delete(endpointId);
    } else if (outcome.responseStatus !== null || outcome.latencyMs !== null) {
      this.quick.delete(endpointId);
      const failures = (this.failing.get(endpointId)?.failures ?? 0) + 1;
      const pause = Math.min(PROBE_PAUSE_MAX_MS, PROBE_PAUSE_MS * 2 ** Math.min(failures - 1, 10));
      remember(this.failing, endpointId, { failures, probeAt: Date.now() + pause });
    }
  }
}

/** Adds `id` (with its value, in a map) as the newest of `known`, forgetting the oldest past ENDPOINTS_REMEMBERED. */
function remember(known: Set<string>, id: string): void;
function remember<V>(known: Map<string, V>, id: string, value: V): void;
function remember<V>(known: Set<string> | Map<string, V>, id: string, value?: V): void {
  known.delete(id);
  if (known instanceof Map) known.set(id, value as V);
  else known.add(id);
  if (known.size > ENDPOINTS_REMEMBERED) known.delete(known.keys().next().value!);
}

/**
 * One account's rows in a process, per endpoint in arrival order. Served from the account's
 * in-flight slots only; within the account the endpoints take turns, and an endpoint holds at
 * most its part of the account's slots (the share over the endpoints with rows waiting) while
 * another endpoint of the account has rows waiting.
 */
class Lane {
  readonly waiting = new Map<string, string[]>();
  /** per endpoint, when each of its waiting rows came into the lane (Date.now()), in the order of `waiting` */
  private readonly since = new Map<string, number[]>();
  size = 0;
  inFlight = 0;
  readonly inFlightByEndpoint = new Map<string, number>();
  /** this process's share of the account's cap, as Redis last answered it (the cap is at most 16) */
  share = 16;
  /** Redis has answered an ask of this lane (`share` is its answer, not the default) */
  shareKnown = false;
  /** no slot asked for before this (Date.now()) */
  pausedUntil = 0;
  /** rows of the account were left in the database because the lane was full */
  overflow = false;
  refilling = false;
  /** the account was woken while its rows were being read (read again once that read is in) */
  wokenDuringRead = false;
  /**
   * Slots freed by a quick 2xx with no row here to take them, kept for the account's next row
   * (SLOT_KEEP_MS). Counted in `inFlight` (this process holds them in Redis), in no endpoint's.
   */
  readonly kept: KeptSlot[] = [];
  /** what the dispatcher's last attempts said of each endpoint (RecentAnswers), shared by its lanes */
  constructor(private readonly answers: RecentAnswers) {}

  /**
   * How many rows `take(n, cap)` could hand out now, counted up to `enough` at most (the pump
   * asks for no more than the lane's free slots, so it stops there: once per release, not once
   * per endpoint waiting).
   */
  room(cap: number, enough: number): number {
    const part = this.partOf(cap);
    let room = 0;
    for (const [endpointId, q] of this.waiting) {
      room += Math.max(0, Math.min(q.length, this.limitOf(endpointId, part) - (this.inFlightByEndpoint.get(endpointId) ?? 0)));
      if (room >= enough) return enough;
    }
    return room;
  }

  /**
   * Slots of the account this process could start attempts on now beyond the rows already here:
   * its share (the smallest cap, FIRST_SHARE, until Redis has answered an ask of the lane) less
   * the rows on the wire and waiting; none while its asks are paused.
   */
  freeSlots(now: number): number {
    if (this.pausedUntil > now) return 0;
    // A kept slot is free for the next row (and held already).
    return (this.shareKnown ? this.share : FIRST_SHARE) - (this.inFlight - this.kept.length) - this.size;
  }

  /** An endpoint's part of `cap` while other endpoints of the account have rows waiting (at least 1). */
  private partOf(cap: number): number {
    return Math.max(1, Math.ceil(cap / Math.max(1, this.waiting.size)));
  }

  /**
   * The most attempts one endpoint may have on the wire: a probe while failing (none until its
   * pause after the last failure is over), its part while others wait.
   */
  private limitOf(endpointId: string, part: number): number {
    if (this.answers.isFailing(endpointId)) return this.answers.probeAt(endpointId) > Date.now() ? 0 : 1;
    return this.waiting.size > 1 ? part : Infinity;
  }

  /** When the earliest pause ends of a failing endpoint with rows waiting here (Infinity: none is paused). */
  probesPausedUntil(now: number): number {
    let until = Infinity;
    if (!this.answers.anyFailing()) return until;
    for (const endpointId of this.waiting.keys()) {
      const at = this.answers.probeAt(endpointId);
      if (at > now && at < until) until = at;
    }
    return until;
  }

  push(row: WaitingRow, now = Date.now()): void {
    const q = this.waiting.get(row.endpointId);
    if (q) {
      q.push(row.id);
      this.since.get(row.endpointId)!.push(now);
    } else {
      this.waiting.set(row.endpointId, [row.id]);
      this.since.set(row.endpointId, [now]);
    }
    this.size += 1;
  }

  /** When the row that has waited longest here came into the lane (Infinity: none waits). */
  oldestSince(): number {
    let oldest = Infinity;
    for (const t of this.since.values()) if (t[0] < oldest) oldest = t[0];
    return oldest;
  }

  /** Up to `n` rows, the endpoints taking turns, each held to its part of `cap` while others wait. */
  take(n: number, cap: number): WaitingRow[] {
    const out: WaitingRow[] = [];
    const part = this.partOf(cap);
    let progress = true;
    while (out.length < n && progress) {
      progress = false;
      for (const [endpointId, q] of this.waiting) {
        if (out.length >= n) break;
        const busy = this.inFlightByEndpoint.get(endpointId) ?? 0;
        if (busy >= this.limitOf(endpointId, part)) continue;
        const id = q.shift()!;
        const since = this.since.get(endpointId)!;
        since.shift();
        if (q.length === 0) this.since.delete(endpointId);
        out.push({ id, accountId: '', endpointId });
        this.inFlightByEndpoint.set(endpointId, busy + 1);
        this.size -= 1;
        progress = true;
        // the endpoint goes to the back of the turn
        this.waiting.delete(endpointId);
        if (q.length > 0) this.waiting.set(endpointId, q);
      }
    }
    this.inFlight += out.length;
    return out;
  }

  /**
   * Up to `n` of the rows `take` would hand out next, of endpoints whose last answer was quick
   * (RecentAnswers), the endpoints in turn, not taken: the rows to claim ahead. Rows for which
   * `skip` holds (claimed ahead already) are passed over.
   */
  peek(n: number, skip: (id: string) => boolean): string[] {
    const out: string[] = [];
    const cursors = new Map<string, number>();
    let progress = true;
    while (out.length < n && progress) {
      progress = false;
      for (const [endpointId, q] of this.waiting) {
        if (out.length >= n) break;
        if (!this.answers.isQuick(endpointId)) continue;
        let c = cursors.get(endpointId) ?? 0;
        while (c < q.length && skip(q[c])) c += 1;
        if (c < q.length) {
          out.push(q[c]);
          c += 1;
          progress = true;
        }
        cursors.set(endpointId, c);
      }
    }
    return out;
  }

  /**
   * An attempt of `endpointId` came off the wire: its slot goes to the row that may go next, if
   * any (the turns and parts of `take`); with none, the attempt is still counted (its slot goes
   * back to Redis as usual).
   */
  passOn(endpointId: string, cap: number): WaitingRow | null {
    this.done(endpointId);
    const [next] = this.take(1, cap);
    if (next) return next;
    this.inFlight += 1;
    this.inFlightByEndpoint.set(endpointId, (this.inFlightByEndpoint.get(endpointId) ?? 0) + 1);
    return null;
  }

  done(endpointId: string): void {
    this.inFlight -= 1;
    const busy = (this.inFlightByEndpoint.get(endpointId) ?? 1) - 1;
    if (busy > 0) this.inFlightByEndpoint.set(endpointId, busy);
    else this.inFlightByEndpoint.delete(endpointId);
  }
}

/** A slot kept for its account's next row (Lane.kept): when Redis granted it, and its return's timer. */
interface KeptSlot {
  slot: Slot;
  takenAt: number;
  timer: NodeJS.Timeout;
}

export type Submitted = { kind: 'queued' } | { kind: 'full' } | { kind: 'wait'; until: Date } | { kind: 'skip' };

/**
 * The DISPATCHER of a worker process (docs/webhooks.md "The delivery engine"): fair share made a
 * data structure. Rows wait per account (a Lane each); whenever slots may be free it asks Redis,
 * in one script, for in-flight slots of every account with rows waiting and room under its share
 * (max(4, ceil(seats/25)), at most 16, shared across processes), and runs the attempt pipeline
 * over every row that got one, together. Each row gives its slot back when its own attempt is
 * recorded (a quick 2xx: as soon as it is answered, or straight to the account's next row while
 * the slot is young: handOff), and the next ask follows at once. So an account's rows wait only for that account's
 * own slots: a receiver that hangs, fails or crawls occupies its own account's share and nothing
 * else: no other account's row waits behind it in a queue, a job, a batch or a round.
 *
 * Asks are never made on a timer on an idle system: a new row asks at once; asks that come while
 * one is under way go together in the next (batching grows with the load).
 */
export class Dispatcher {
  private readonly lanes = new Map<string, Lane>();
  private readonly answers = new RecentAnswers();
  /** ids waiting or in flight here (a row handed over twice is queued once) */
  private readonly known = new Set<string>();
  /** the sends of rows of another kind of target (WaitingRow.send), by row id */
  private readonly sends = new Map<string, () => Promise<void>>();
  /** rows of the lanes claimed ahead of their slots (ClaimsAhead) */
  private readonly ahead = new ClaimsAhead();
  /** per account, rows chosen by `claimable` whose fan-out write and submit are under way */
  private readonly reserved = new Map<string, number>();
  /** accounts whose lanes keep slots (Lane.kept) */
  private readonly keeping = new Set<string>();
  private inFlight = 0;
  /**
   * A pump found the process's cap (MAX_IN_FLIGHT) reached with rows waiting: the next row to
   * finish pumps. Rows count until recorded, and a row whose quick 2xx gave its slot back
   * finishes after that release's pump: without this, a process at the cap whose last rows then
   * finished asked for nothing again, its lanes full and nothing on the wire.
   */
  private capBound = false;
  private asking = false;
  private again = false;
  private timer: NodeJS.Timeout | null = null;
  private timerAt = 0;
  private closing = false;
  private drained: Array<() => void> = [];
  /** rows handed a slot that came off the wire (run together at the next turn of the event loop) */
  private handoffs: Array<{ row: WaitingRow; lane: Lane; slot: Slot; takenAt: number }> = [];
  private readonly heads: Coalescer<string, RowHead | undefined>;
  private readonly releases: Coalescer<Slot, null>;
  private readonly maxWaiting: number;
  private readonly maxInFlight: number;
  private readonly slotKeepMs: number;

  constructor(
    private readonly deps: Deps,
    private readonly transport: WebhookTransport,
    /** each recorded outcome (the worker schedules retries and wake-ups from it) */
    private readonly onOutcome: (outcome: AttemptOutcome) => void,
    options: { maxWaitingPerAccount?: number; maxInFlight?: number; slotKeepMs?: number; releaseGatherMs?: number } = {},
  ) {
    this.maxWaiting = options.maxWaitingPerAccount ?? MAX_WAITING_PER_ACCOUNT;
    this.maxInFlight = options.maxInFlight ?? MAX_IN_FLIGHT;
    this.slotKeepMs = options.slotKeepMs ?? SLOT_KEEP_MS;
    this.heads = new Coalescer(async (ids) => {
      const found = await loadRowHeads(deps.database.db, ids);
      return ids.map((id) => found.get(id));
    });
    // Slots going back to Redis gather (GATHER_MS): nobody waits for them, and the lane counts
    // each as held until Redis has it back.
    this.releases = new Coalescer(async (slots) => {
      await releaseSlots(deps, slots).catch((err: Error) =>
        deps.logger.warn('giving in-flight slots back failed; they expire after the claim time', { error: err.message }));
      return slots.map(() => null);
    }, { gatherMs: options.releaseGatherMs ?? GATHER_MS });
  }

  /**
   * Per account, when the row that has waited longest in its lane came in, for the lanes whose
   * oldest row came before `before` (lane-ages.ts: published for the sweep).
   */
  waitingSince(before: number): Map<string, number> {
    const out = new Map<string, number>();
    for (const [accountId, lane] of this.lanes) {
      if (lane.size === 0) continue;
      const since = lane.oldestSince();
      if (since < before) out.set(accountId, since);
    }
    return out;
  }

  /** Rows waiting here, attempts on the wire, and the accounts (lanes) they belong to (tests, metrics). */
  stats(): { waiting: number; inFlight: number; accounts: number } {
    let waiting = 0;
    for (const lane of this.lanes.values()) waiting += lane.size;
    return { waiting, inFlight: this.inFlight, accounts: this.lanes.size };
  }

  /**
   * Of a fan-out's rows about to be written, those to CLAIM AT THE WRITE (docs/webhooks.md "The
   * delivery engine", 6): the rows that will get a slot at once, so the write's own read serves
   * their attempts and no claim statement stands between the fan-out and the POST. Per account,
   * as many as its free slots here: its share (the smallest cap, FIRST_SHARE, until Redis has
   * answered the lane's first ask) less the rows on the wire, waiting (rows claimed ahead among
   * them) and reserved by other fan-outs whose writes are under way; none for an account whose
   * asks are paused, nor of an endpoint that is being probed (RecentAnswers). Beyond the free
   * slots, rows of an endpoint whose last answer was quick are claimed too, as CLAIMED AHEAD
   * (ClaimsAhead, where submit puts every row claimed at the write): up to CLAIMS_AHEAD_PER_SLOT
   * times the share, less the rows of the account claimed ahead already and those reserved, and
   * only while fewer than that many rows wait before it in the lane, so a burst larger than the
   * account's slots waits for them without a claim statement each, and a row behind a queue
   * leaves the claims ahead to the rows at its head (claimNext). The rows chosen
   * stay RESERVED until `release` (call it once the write's rows are submitted, or the write
   * failed), so fan-outs running side by side never claim more than the free slots between them.
   * A row so claimed that then waits past CLAIM_AHEAD_FRESH_MS is claimed and read again like any other.
   */
  claimable(rows: ReadonlyArray<{ id: string; accountId: string; endpointId: string }>): { ids: Set<string>; release: () => void } {
    const ids = new Set<string>();
    const taken = new Map<string, number>();
    if (!this.closing) {
      let room = this.maxInFlight - this.inFlight;
      const now = Date.now();
      /** per account: slots free here, and rows it may still have claimed ahead (ClaimsAhead) */
      const budgets = new Map<string, { slots: number; ahead: number }>();
      for (const r of rows) {
        if (this.answers.isFailing(r.endpointId)) continue;
        let b = budgets.get(r.accountId);
        if (!b) {
          const lane = this.lanes.get(r.accountId);
          const reserved = this.reserved.get(r.accountId) ?? 0;
          const share = lane?.shareKnown ? lane.share : FIRST_SHARE;
          // Claimed ahead: up to CLAIMS_AHEAD_PER_SLOT times the share, counting the rows of the
          // account claimed ahead already, or, when more rows wait in its lane, those rows (a row
          // behind them would wait past CLAIM_AHEAD_FRESH_MS, and be claimed again in its slot,
          // while holding a place the rows at the head of the lane need to be claimed ahead), and
          // the rows other fan-outs under way have reserved.
          const before = Math.max(this.ahead.countOf(r.accountId), lane?.size ?? 0) + reserved;
          b = {
            slots: (lane?.freeSlots(now) ?? FIRST_SHARE) - reserved,
            ahead: lane && lane.pausedUntil > now ? 0 : CLAIMS_AHEAD_PER_SLOT * share - before,
          };
          budgets.set(r.accountId, b);
        }
        if (b.slots > 0 && room > 0) {
          b.slots -= 1;
          room -= 1;
        } else if (b.ahead > 0 && this.answers.isQuick(r.endpointId)) {
          // No slot now, but the endpoint answers quickly and the row is among the next ones its
          // slots will take: claimed at the write all the same, and held as claimed ahead (sent
          // on this read if its slot comes while it is fresh).
          b.ahead -= 1;
        } else continue;
        taken.set(r.accountId, (taken.get(r.accountId) ?? 0) + 1);
        ids.add(r.id);
      }
    }
    for (const [accountId, n] of taken) this.reserved.set(accountId, (this.reserved.get(accountId) ?? 0) + n);
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      for (const [accountId, n] of taken) {
        const left = (this.reserved.get(accountId) ?? 0) - n;
        if (left > 0) this.reserved.set(accountId, left);
        else this.reserved.delete(accountId);
      }
    };
    return { ids, release };
  }

  /**
   * Queues rows known by account and endpoint (a fan-out's). Answers how many were taken; a row
   * of an account that has MAX_WAITING_PER_ACCOUNT waiting here stays open in the database for
   * the sweep. `held`: rows the fan-out claimed at its write (`claimable`), with their claim's
   * read; they are sent on it while it is fresh, and a row of them not taken gets its claim back.
   */
  submit(rows: readonly WaitingRow[], held?: ReadonlyMap<string, HeldClaim>): number {
    if (this.closing) {
      if (held && held.size > 0) this.giveBackHeld([...held.values()]);
      return 0;
    }
    let taken = 0;
    const untaken: HeldClaim[] = [];
    for (const r of rows) {
      const h = held?.get(r.id);
      if (this.known.has(r.id)) {
        if (h) untaken.push(h);
        taken += 1;
        continue;
      }
      let lane = this.lanes.get(r.accountId);
      if (!lane) {
        lane = new Lane(this.answers);
        this.lanes.set(r.accountId, lane);
      }
      if (lane.size >= this.maxWaiting) {
        lane.overflow = true;
        if (h) untaken.push(h);
        continue;
      }
      lane.push(r);
      this.known.add(r.id);
      if (r.send) this.sends.set(r.id, r.send);
      if (h) this.ahead.add(r.id, r.accountId, Promise.resolve(h));
      taken += 1;
    }
    if (untaken.length > 0) this.giveBackHeld(untaken);
    if (taken > 0) this.pump();
    return taken;
  }

  /** Gives back claims this dispatcher will not send on (the rows stay open for whoever takes them next). */
  private giveBackHeld(rows: HeldClaim[]): void {
    giveBack(this.deps.database.db, rows).catch((err: Error) =>
      this.deps.logger.warn('giving back claims failed; they lapse after the claim time', { rows: rows.length, error: err.message }));
  }

  /** Queues a row known only by its id (a wake-up job's): or says when it is due, or that it is closed. */
  async submitId(id: string): Promise<Submitted> {
    if (this.known.has(id)) return { kind: 'queued' };
    const head = await this.heads.add(id);
    if (!head || !OPEN_STATUSES.includes(head.status as DeliveryStatus)) return { kind: 'skip' };
    const now = this.deps.now();
    if (head.nextRetryAt && head.nextRetryAt > now) return { kind: 'wait', until: head.nextRetryAt };
    if (head.claimedUntil && head.claimedUntil >= now) return { kind: 'wait', until: new Date(head.claimedUntil.getTime() + 1) };
    return this.submit([head]) === 1 ? { kind: 'queued' } : { kind: 'full' };
  }

  private pump(): void {
    if (this.closing) return;
    this.useKeptSlots();
    if (this.asking) {
      this.again = true;
      return;
    }
    const now = Date.now();
    const wanted = new Map<string, number>();
    let room = this.maxInFlight - this.inFlight;
    let wakeAt = Infinity;
    for (const [accountId, lane] of this.lanes) {
      if (room <= 0) {
        this.capBound = true;
        break;
      }
      if (lane.size === 0) continue;
      if (lane.pausedUntil > now) {
        wakeAt = Math.min(wakeAt, lane.pausedUntil);
        continue;
      }
      // Rows held back by a failing endpoint's pause: the pump comes back when it ends (even
      // while the account's other endpoints have rows going, which may hold its slots long).
      wakeAt = Math.min(wakeAt, lane.probesPausedUntil(now));
      const n = lane.room(lane.share, Math.min(lane.share - lane.inFlight, room));
      if (n <= 0) continue;
      wanted.set(accountId, n);
      room -= n;
    }
    if (wakeAt < Infinity) this.wakeAt(wakeAt);
    if (wanted.size === 0) return;
    this.asking = true;
    // Before the ask: the lease's expiry in Redis's clock is no earlier than this plus its length.
    const askedAt = Date.now();
    acquireInFlightSlots(this.deps, wanted, claimMs(this.deps.config))
      .then(
        (leases) => {
          if (this.closing) {
            void leases.release();
            return;
          }
          const batch: Array<{ row: WaitingRow; lane: Lane; slot: Slot; takenAt: number }> = [];
          const pause = Date.now() + NO_SLOT_PAUSE_MS + Math.floor(Math.random() * NO_SLOT_PAUSE_MS);
          for (const [accountId, n] of wanted) {
            const lane = this.lanes.get(accountId);
            if (!lane) continue;
            const share = leases.shares.get(accountId);
            if (share !== undefined) {
              lane.share = share;
              lane.shareKnown = true;
            }
            const got = leases.count(accountId);
            // Fewer slots than asked for: the rest are held elsewhere, and their release does not
            // reach this process: ask again after a short pause.
            if (got < n) lane.pausedUntil = pause;
            for (const row of lane.take(got, lane.share)) batch.push({ row: { ...row, accountId }, lane, slot: leases.detach(accountId)!, takenAt: askedAt });
            // Accounts served go to the back of the turn (it matters when MAX_IN_FLIGHT binds).
            this.lanes.delete(accountId);
            this.lanes.set(accountId, lane);
          }
          void leases.release(); // slots of lanes that emptied meanwhile
          this.start(batch);
        },
        (err: Error) => {
          this.deps.logger.warn('taking in-flight slots failed; the rows wait', { error: err.message });
          const until = Date.now() + REDIS_AWAY_PAUSE_MS;
          for (const accountId of wanted.keys()) {
            const lane = this.lanes.get(accountId);
            if (lane) lane.pausedUntil = until;
          }
        },
      )
      .finally(() => {
        this.asking = false;
        if (this.again) {
          this.again = false;
          this.pump();
        } else {
          for (const lane of this.lanes.values()) {
            if (lane.size > 0 && lane.pausedUntil > Date.now()) this.wakeAt(lane.pausedUntil);
          }
        }
      });
  }

  private wakeAt(at: number): void {
    if (this.timer && this.timerAt <= at) return;
    if (this.timer) clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.pump();
    }, Math.max(0, at - Date.now()));
    this.timer.unref();
  }

  /**
   * Hands a slot that came off the wire straight to its account's next row, when one may go now
   * (the lane's turns and parts, this process's share) and the slot is young (SLOT_HANDOFF_MS):
   * no round trip to Redis to give it back and another to take it again, which is most of the
   * time a slot is held between two quick attempts. Answers whether it did.
   */
  private handOff(item: { row: WaitingRow; lane: Lane; slot: Slot; takenAt: number }): boolean {
    const { lane } = item;
    if (this.closing || Date.now() - item.takenAt > SLOT_HANDOFF_MS || lane.size === 0 || !this.redisUp()) return false;
    if (this.inFlight >= this.maxInFlight || lane.inFlight > lane.share) return false;
    const next = lane.passOn(item.row.endpointId, lane.share);
    if (!next) return false;
    this.handoffs.push({ row: { ...next, accountId: item.row.accountId }, lane, slot: item.slot, takenAt: item.takenAt });
    // Every answer that came in this turn of the event loop goes in one pipeline.
    if (this.handoffs.length === 1) setImmediate(() => this.start(this.handoffs.splice(0)));
    return true;
  }

  /**
   * Keeps a slot that came off a quick 2xx, with no row of its account to hand it to now, for the
   * account's next row (SLOT_KEEP_MS), while its attempt would still start within
   * SLOT_HANDOFF_MS of its grant; after that it goes back to Redis. Answers whether it did.
   */
  private keep(item: { row: WaitingRow; lane: Lane; slot: Slot; takenAt: number }): boolean {
    const { lane } = item;
    if (this.closing || lane.size > 0 || lane.inFlight > lane.share || !this.redisUp()) return false;
    if (Date.now() - item.takenAt + this.slotKeepMs > SLOT_HANDOFF_MS) return false;
    // The endpoint's attempt is over; the slot stays the lane's (held in Redis).
    lane.done(item.row.endpointId);
    lane.inFlight += 1;
    const accountId = item.row.accountId;
    const kept: KeptSlot = { slot: item.slot, takenAt: item.takenAt, timer: setTimeout(() => this.returnKept(accountId, lane, kept), this.slotKeepMs) };
    kept.timer.unref();
    lane.kept.push(kept);
    this.keeping.add(accountId);
    return true;
  }

  /** A kept slot no row took in time goes back to Redis. */
  private returnKept(accountId: string, lane: Lane, kept: KeptSlot): void {
    const i = lane.kept.indexOf(kept);
    if (i < 0) return;
    lane.kept.splice(i, 1);
    if (lane.kept.length === 0) this.keeping.delete(accountId);
    // Counted as held until Redis has it back (as any slot given back: see start's release).
    void this.releases.add(kept.slot).finally(() => {
      lane.inFlight -= 1;
      this.dropIfIdle(accountId, lane);
      this.pump();
    });
  }

  /**
   * Whether this process's connection to Redis is up. A slot is handed on or kept only then: with
   * Redis away, slots cannot be counted (a Redis that restarts empty no longer knows this one),
   * so nothing more is sent on them.
   */
  private redisUp(): boolean {
    return this.deps.redis.status === 'ready';
  }

  /** Rows that came to lanes keeping slots go out on those slots at once, without asking Redis. */
  private useKeptSlots(): void {
    // With Redis away no kept slot is used (redisUp): asked once for every lane.
    if (this.keeping.size === 0 || !this.redisUp()) return;
    const batch: Array<{ row: WaitingRow; lane: Lane; slot: Slot; takenAt: number }> = [];
    for (const accountId of this.keeping) {
      const lane = this.lanes.get(accountId);
      if (!lane || lane.kept.length === 0) {
        this.keeping.delete(accountId);
        continue;
      }
      const room = this.maxInFlight - this.inFlight - batch.length;
      if (lane.size === 0 || room <= 0) continue;
      const rows = lane.take(Math.min(lane.kept.length, room), lane.share);
      // `take` counts its rows as in flight; their slots were counted already.
      lane.inFlight -= rows.length;
      for (const row of rows) {
        const kept = lane.kept.pop()!;
        clearTimeout(kept.timer);
        batch.push({ row: { ...row, accountId }, lane, slot: kept.slot, takenAt: kept.takenAt });
      }
      if (lane.kept.length === 0) this.keeping.delete(accountId);
    }
    if (batch.length > 0) this.start(batch);
  }

  private start(all: Array<{ row: WaitingRow; lane: Lane; slot: Slot; takenAt: number }>): void {
    if (all.length === 0) return;
    this.inFlight += all.length;
    type Item = (typeof all)[number];
    // A row answered by a quick 2xx gives its in-flight slot back at once, before its record
    // (the shared one-statement close): the account's next row need not wait for that write.
    // Any other attempt holds its slot until recorded, so an account whose receiver fails keeps
    // its record work (a transaction each) within its own slots. The row stays claimed until it
    // is recorded, and known here until then (a wake-up of it queues nothing).
    const released = new Set<Item>();
    // handOn: the slot came off a quick 2xx and may go straight to the account's next row; a slot
    // held through a recorded failure goes back to Redis (a failing receiver's probes keep the
    // pace of a give-back and an ask, and take no more of the worker).
    const release = (item: Item, handOn = false) => {
      if (released.has(item)) return;
      released.add(item);
      if (handOn && (this.handOff(item) || this.keep(item))) return;
      // The lane counts the slot as held until Redis has it back: a pump in between would ask
      // for a slot Redis still counts, get fewer than it asked for, and pause the lane.
      void this.releases.add(item.slot).finally(() => {
        item.lane.done(item.row.endpointId);
        this.dropIfIdle(item.row.accountId, item.lane);
        this.pump();
      });
    };
    const finish = (item: Item) => {
      release(item);
      this.inFlight -= 1;
      this.known.delete(item.row.id);
      if (this.capBound && this.inFlight < this.maxInFlight) {
        this.capBound = false;
        this.pump();
      }
      if (item.lane.overflow && !item.lane.refilling && item.lane.size < this.maxWaiting / 2) this.refill(item.row.accountId, item.lane);
      this.dropIfIdle(item.row.accountId, item.lane);
      if (this.inFlight === 0) for (const d of this.drained.splice(0)) d();
    };
    // Rows of another kind of target run their own send; the delivery rows go through the pipeline together.
    const batch: Item[] = [];
    for (const b of all) {
      const send = this.sends.get(b.row.id);
      if (!send) {
        batch.push(b);
        continue;
      }
      this.sends.delete(b.row.id);
      send()
        .catch((err: Error) => this.deps.logger.warn('a send failed', { row: b.row.id, error: err.message }))
        .finally(() => finish(b));
    }
    if (batch.length === 0) return;
    runPipeline(this.deps, this.transport, batch.map((b) => b.row.id), (k) => release(batch[k], true), { claims: this.ahead, next: this.claimNext(batch) }).then(
      (outcomes) => {
        outcomes.forEach((p, k) => {
          p.then(
            (outcome) => {
              this.answers.note(batch[k].row.endpointId, outcome);
              this.onOutcome(outcome);
            },
            (err: Error) => this.deps.logger.warn('recording an attempt failed; its claim lapses and the sweep hands it on', { delivery_id: batch[k].row.id, error: err.message }),
          ).finally(() => finish(batch[k]));
        });
      },
      (err: Error) => {
        // Nothing was sent: the rows stay open in the database, and the sweep hands them on.
        this.deps.logger.warn('an attempt pipeline failed before sending; its rows wait for the sweep', { rows: batch.length, error: err.message });
        for (const b of batch) finish(b);
      },
    );
  }

  /**
   * The rows to claim ahead with a pipeline's rows: per account, CLAIMS_AHEAD_PER_SLOT of its
   * lane's next rows per row the pipeline has of it, while fewer than that many times the
   * account's share are claimed ahead (the slots these rows hold will come off the wire, and go
   * straight to them).
   */
  private claimNext(batch: ReadonlyArray<{ row: WaitingRow; lane: Lane }>): Array<{ id: string; accountId: string }> {
    const perLane = new Map<Lane, { accountId: string; n: number }>();
    for (const { row, lane } of batch) {
      const e = perLane.get(lane);
      if (e) e.n += 1;
      else perLane.set(lane, { accountId: row.accountId, n: 1 });
    }
    const next: Array<{ id: string; accountId: string }> = [];
    // (A send of another kind of target is never peeked: its endpoint, the target, is never quick.)
    const skip = (id: string) => this.ahead.has(id);
    for (const [lane, { accountId, n }] of perLane) {
      const want = Math.min(CLAIMS_AHEAD_PER_SLOT * n, CLAIMS_AHEAD_PER_SLOT * lane.share - this.ahead.countOf(accountId));
      if (want > 0 && lane.size > 0) for (const id of lane.peek(want, skip)) next.push({ id, accountId });
    }
    return next;
  }

  /**
   * An account's wake-up (a retry due, the sweep): its due rows are read from the database into
   * its lane. A lane that has no room now reads them as it drains (the same path as a lane that
   * had to leave rows behind); a read under way when the wake-up comes is followed by another,
   * since it may have been taken before the rows it wakes were due.
   */
  wakeAccount(accountId: string): void {
    if (this.closing) return;
    let lane = this.lanes.get(accountId);
    if (!lane) {
      lane = new Lane(this.answers);
      this.lanes.set(accountId, lane);
    }
    lane.overflow = true;
    if (lane.refilling) lane.wokenDuringRead = true;
    else if (lane.size < this.maxWaiting / 2) this.refill(accountId, lane);
  }

  /** Reads more of a lane's account's due rows from the database (it left some there, or was woken). */
  private refill(accountId: string, lane: Lane): void {
    lane.refilling = true;
    const want = this.maxWaiting - lane.size;
    // The account's rows already here (waiting or on the wire) come back too: read past them.
    const limit = want + lane.size + lane.inFlight;
    openRowsOfAccount(this.deps.database.db, accountId, this.deps.now(), limit)
      .then((rows) => {
        lane.refilling = false;
        const unknown = rows.filter((r) => !this.known.has(r.id));
        const fresh = unknown.slice(0, want);
        // Every open row of the account is here only if the read was not cut by its limit and
        // nothing it found is left behind. (Rows claimed by attempts on the wire are not read, so
        // the limit overcounts and a short read alone proves nothing.)
        if (rows.length < limit && unknown.length <= want) lane.overflow = false;
        if (lane.wokenDuringRead) {
          lane.wokenDuringRead = false;
          lane.overflow = true;
        }
        if (!this.lanes.has(accountId)) this.lanes.set(accountId, lane);
        // Nothing new, but rows waiting here: ask for slots all the same (a wake-up of the
        // account, the sweep's among them, then also restarts a lane that has stopped asking).
        if (this.submit(fresh) === 0 && lane.size > 0) this.pump();
        if (!this.closing && lane.overflow && !lane.refilling && lane.size < this.maxWaiting / 2 && lane.inFlight === 0) this.refill(accountId, lane);
        else this.dropIfIdle(accountId, lane);
      })
      .catch((err: Error) => {
        lane.refilling = false;
        this.deps.logger.warn('reading more rows of an account failed; the sweep hands them on', { account_id: accountId, error: err.message });
        this.dropIfIdle(accountId, lane);
      });
  }

  /** Forgets a lane with nothing waiting, on the wire or being read. */
  private dropIfIdle(accountId: string, lane: Lane): void {
    if (lane.size === 0 && lane.inFlight === 0 && !lane.refilling && this.lanes.get(accountId) === lane) this.lanes.delete(accountId);
  }

  /** Takes no more rows, forgets the waiting ones (open in the database), and resolves once the attempts on the wire are recorded. */
  async close(): Promise<void> {
    this.closing = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    for (const lane of this.lanes.values()) {
      for (const ids of lane.waiting.values()) {
        for (const id of ids) {
          this.known.delete(id);
          this.sends.delete(id);
        }
      }
      lane.waiting.clear();
      lane.size = 0;
    }
    if (this.inFlight > 0) await new Promise<void>((resolve) => this.drained.push(resolve));
    // Kept slots go back to Redis at once (attempts that ended meanwhile kept none: closing).
    const kept: Slot[] = [];
    for (const lane of this.lanes.values()) {
      for (const k of lane.kept.splice(0)) {
        clearTimeout(k.timer);
        kept.push(k.slot);
        lane.inFlight -= 1;
      }
    }
    this.keeping.clear();
    for (const [accountId, lane] of [...this.lanes]) this.dropIfIdle(accountId, lane);
    await releaseSlots(this.deps, kept).catch((err: Error) =>
      this.deps.logger.warn('giving kept in-flight slots back failed; they expire after the claim time', { error: err.message }));
    // Slots of the last attempts, gathering to go back: they go now.
    await this.releases.drain();
    // Rows claimed ahead (by pipelines that have all started by now) go back to the database
    // unclaimed, for the next process to take at once.
    const held = (await Promise.all(this.ahead.takeAll())).filter((h) => h !== undefined);
    await giveBack(this.deps.database.db, held).catch((err: Error) =>
      this.deps.logger.warn('giving back rows claimed ahead failed; their claims lapse after the claim time', { rows: held.length, error: err.message }));
  }
}
