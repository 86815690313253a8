import { rememberBounded } from '../../bounded-memo';
import type { Deps } from '../../context';
import type { FannedOutDelivery } from './fan-out';
import { acquireInFlightSlots, Leases } from './in-flight';
import { loadContexts, runRound, type BatchState, type Item } from './round';
import { claimMs } from './schedule';
import type { WebhookTransport } from './transport';

/**
 * After this long, a batch's rows still waiting for a slot leave for single attempts. The batch's
 * claim on its rows lasts this long plus one attempt's claim time (batch.ts).
 */
export const BATCH_BUDGET_MS = 8_000;
/** Pause before trying for slots again when none of the waiting accounts had one free. */
const NO_SLOT_PAUSE_MS = 25;
/**
 * A round on the wire younger than this holds the next one back: slots that come free meanwhile
 * (a batch's first round, a grant) join the next round when its answers are in, or go on their
 * own once it is this old (a slow receiver in it holds nobody else's slots longer).
 */
export const MERGE_WAIT_MS = 50;
/**
 * Leases of the rounds are taken for one attempt's claim time plus this, and carried from round
 * to round while they have at least a whole claim time left: for up to this long a process keeps
 * an account's slots while its rows wait, with no Redis command between two rounds. A killed
 * worker's leases still expire, this much later than a single attempt's.
 */
export const CARRY_MS = 1_000;

/** How long the leases of batch and shared rounds are taken for (see CARRY_MS). */
export function roundLeaseMs(config: Deps['config']): number {
  return claimMs(config) + CARRY_MS;
}

interface Waiting extends Item {
  /** the row has left the queue for good (attempted and recorded, detached, or handed on) */
  done(): void;
}

/**
 * The rounds of one worker process (issue 11 throughput): the rows every fan-out batch of the
 * process could not attempt in its own first round wait here, per account in fan-out order, and
 * go out in SHARED rounds: one start at a time takes in-flight slots for every waiting account
 * (one script), and puts every row that got one into one round (round.ts: one charge, one
 * read of its endpoints, one close for the round). A round runs on by itself; when its answers
 * are in, its slots pass to the next round (carried while they have a whole claim time left, see
 * CARRY_MS; slots nobody waits for are given back) and that round starts with whatever is
 * waiting. So concurrent batches do not split the
 * accounts' slots into many small rounds (each paying the same round trips), and nobody polls
 * for slots another batch of the same process holds.
 *
 * A row leaves for single attempts (its batch's `out.jobs`, its claim given back by the batch)
 * when its endpoint was handed off by its batch (a slow or failing answer), or when its batch is
 * older than BATCH_BUDGET_MS (so every row sent here still has one whole attempt's claim left:
 * batch.ts). If a
 * round fails (database or Redis), each batch with a row in it is marked failed and hands all
 * its rows to single attempts (a row already closed, or under a live claim, is skipped or waited
 * for by its job): nothing is lost, nothing is attempted twice at once.
 */
export class SharedRounds {
  private readonly queues = new Map<string, Waiting[]>();
  private starting = false;
  private again = false;
  private timer: NodeJS.Timeout | null = null;
  /** slots of answered rounds, for the next round (see CARRY_MS) */
  private carried: Leases | null = null;
  /** rounds whose attempts are not all answered yet */
  private sending = 0;
  /** when the last round started (Date.now()) */
  private lastStartAt = 0;
  /** this process's share of each account's cap, as Redis last answered it (see ACQUIRE) */
  private readonly shares = new Map<string, number>();

  private readonly mergeWaitMs: number;

  constructor(private readonly deps: Deps, private readonly transport: WebhookTransport, options: { mergeWaitMs?: number } = {}) {
    this.mergeWaitMs = options.mergeWaitMs ?? MERGE_WAIT_MS;
  }

  /** Queues a batch's rows; resolves once each was attempted and recorded (or detached as a straggler of its batch), or handed to `batch.out.jobs`. */
  run(batch: BatchState, rows: readonly FannedOutDelivery[]): Promise<void> {
    if (rows.length === 0) return Promise.resolve();
    return new Promise((resolve) => {
      let left = rows.length;
      const done = () => {
        left -= 1;
        if (left === 0) resolve();
      };
      for (const r of rows) {
        const w: Waiting = { r, batch, done };
        const q = this.queues.get(r.accountId);
        if (q) q.push(w);
        else this.queues.set(r.accountId, [w]);
      }
      this.pump();
    });
  }

  private pump(): void {
    if (this.starting) {
      this.again = true;
      return;
    }
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    this.starting = true;
    this.again = false;
    let heldMs = 0;
    this.start()
      .then((ms) => { heldMs = ms; })
      .catch((err: Error) => this.failWaiting(err))
      .finally(() => {
        this.starting = false;
        if (this.again) this.pump();
        else if (this.queues.size > 0 && !this.timer) {
          // Held back by a young round: until it is old enough (its answers may come sooner and
          // start the next round). Otherwise, with no round on the wire to start the next one,
          // poll: slots held elsewhere (another process, or stragglers) free up without telling us.
          const ms = heldMs > 0 ? heldMs : this.sending === 0 ? NO_SLOT_PAUSE_MS : 0;
          if (ms > 0) {
            this.timer = setTimeout(() => {
              this.timer = null;
              this.pump();
            }, ms);
            this.timer.unref();
          }
        }
      });
  }

  /**
   * Starts one round with every waiting row that gets a slot; the round then runs on by itself.
   * Answers 0, or how long the round on the wire holds this one back (MERGE_WAIT_MS).
   */
  private async start(): Promise<number> {
    const now = Date.now();
    for (const [accountId, q] of this.queues) {
      const keep = q.filter((w) => {
        const leaves = w.batch.failed !== null || w.batch.handedOff.has(w.r.endpointId) || now - w.batch.started >= BATCH_BUDGET_MS;
        if (!leaves) return true;
        if (w.batch.failed === null) {
          // a failed batch hands every row on itself
          w.batch.out.jobs.push({ id: w.r.id });
          w.batch.unattempted.push(w.r.id);
        }
        w.done();
        return false;
      });
      if (keep.length > 0) this.queues.set(accountId, keep);
      else this.queues.delete(accountId);
    }
    if (this.queues.size === 0) {
      await this.dropCarried();
      return 0;
    }
    const held = this.sending > 0 ? this.lastStartAt + this.mergeWaitMs - now : 0;
    if (held > 0) return held;

    const wanted = new Map([...this.queues].map(([a, q]) => [a, q.length]));
    const leases = await this.slots(wanted);
    const round: Waiting[] = [];
    for (const [accountId, q] of this.queues) {
      const n = leases.count(accountId);
      if (n === 0) continue;
      round.push(...q.splice(0, n));
      if (q.length === 0) this.queues.delete(accountId);
    }
    if (round.length === 0) {
      await leases.release();
      return 0;
    }
    let answered = false;
    this.sending += 1;
    this.lastStartAt = Date.now();
    const onAnswered = () => {
      if (answered) return;
      answered = true;
      this.sending -= 1;
      // The round's attempts are answered: their slots go to the next round, which may start
      // while this one records.
      this.carry(leases);
    };
    // The rows may have waited for seconds: their endpoints and accounts are read again while
    // the round's units are charged, and the round sends with what it read (runRound).
    const fresh = loadContexts(this.deps, [...new Set(round.map((w) => w.r.endpointId))]);
    void this.finish(round, onAnswered, runRound(this.deps, this.transport, round, leases, onAnswered, fresh));
    return 0;
  }

  /**
   * Slots for the waiting rows: the carried ones first (those with a whole claim time left),
   * then, only for accounts below their cap, more from Redis; carried slots nobody waits for go back.
   */
  private async slots(wanted: ReadonlyMap<string, number>): Promise<Leases> {
    const carried = this.carried;
    this.carried = null;
    if (!carried) return this.ask(wanted);
    const kept = carried.take(wanted, claimMs(this.deps.config));
    void carried.release();
    // An account whose carried slots already make this process's share (as Redis last answered
    // it) is not asked for again; carried slots are at most CARRY_MS old, so the share is asked
    // again that often.
    const more = new Map<string, number>();
    for (const [a, n] of wanted) {
      const want = Math.min(n, this.shares.get(a) ?? n) - kept.count(a);
      if (want > 0) more.set(a, want);
    }
    if (more.size === 0) return kept;
    if ([...wanted.keys()].some((a) => kept.count(a) > 0)) {
      // The round goes with the slots it carries; more slots, if Redis grants any, join the next
      // round when they come (with no round on the wire, they start one), instead of holding this
      // one back for the ask.
      this.ask(more).then(
        (got) => {
          if (![...more.keys()].some((a) => got.count(a) > 0)) return;
          this.hold(got);
          if (this.sending === 0) this.pump();
        },
        (err: Error) => this.deps.logger.warn('taking more in-flight slots failed; the next round asks again', { error: err.message }),
      );
      return kept;
    }
    try {
      return kept.absorb(await this.ask(more));
    } catch (err) {
      await kept.release();
      throw err;
    }
  }

  /** Slots from Redis, remembering this process's share of each account's cap. */
  private async ask(wanted: ReadonlyMap<string, number>): Promise<Leases> {
    const got = await acquireInFlightSlots(this.deps, wanted, roundLeaseMs(this.deps.config));
    for (const [a, share] of got.shares) rememberBounded(this.shares, 10_000, a, share);
    return got;
  }

  /** Keeps slots for the next round. */
  private hold(leases: Leases): void {
    this.carried = (this.carried ?? Leases.none(this.deps)).absorb(leases);
  }

  /** Hands answered attempts' slots to the next round (a batch's first round too) and starts it. */
  carry(leases: Leases): void {
    this.hold(leases);
    this.pump();
  }

  private async dropCarried(): Promise<void> {
    const c = this.carried;
    this.carried = null;
    await c?.release();
  }

  private async finish(round: Waiting[], onAnswered: () => void, running: Promise<void>): Promise<void> {
    try {
      await running;
    } catch (err) {
      this.deps.logger.warn('a delivery round failed; its batches\' rows go to single attempts', { error: (err as Error).message });
      for (const w of round) w.batch.failed ??= err as Error;
    }
    onAnswered(); // a round that failed before its answers hands its slots on here
    for (const w of round) w.done();
  }

  /** Slots could not be taken (Redis away): every waiting row's batch hands its rows to single attempts. */
  private failWaiting(err: Error): void {
    this.deps.logger.warn('taking in-flight slots failed; waiting rows go to single attempts', { error: err.message });
    for (const q of this.queues.values()) {
      for (const w of q) {
        w.batch.failed ??= err;
        w.done();
      }
    }
    this.queues.clear();
  }
}

const byTransport = new WeakMap<WebhookTransport, SharedRounds>();

/** The process's shared rounds for this transport (one per worker process; tests get one per transport). */
export function sharedRoundsFor(deps: Deps, transport: WebhookTransport): SharedRounds {
  let rounds = byTransport.get(transport);
  if (!rounds) {
    rounds = new SharedRounds(deps, transport);
    byTransport.set(transport, rounds);
  }
  return rounds;
}
