import type { Deps } from '../../context';
import { planFanOut, writeFanOut, type FannedOutDelivery } from './fan-out';
import { acquireInFlightSlots } from './in-flight';
import { eligible, loadContexts, runRound, type BatchOutcome, type BatchState } from './round';
import { claimMs } from './schedule';
import { BATCH_BUDGET_MS, roundLeaseMs, sharedRoundsFor, type SharedRounds } from './shared-rounds';
import { releaseClaims } from './store';
import type { WebhookTransport } from './transport';

/**
 * The first attempts of a fan-out batch, made by the fan-out job itself (issue 11 throughput),
 * in rounds (round.ts: every round trip once per round, not once per delivery):
 *
 *   the batch's own first round, folded into the fan-out's write (below), then the process's
 *   shared rounds (shared-rounds.ts) for the rows that round had no slot for.
 *
 * Anything out of the common case leaves the batch for the single-attempt path, which owns those
 * rules: a delivery whose endpoint is disabled, deleted or whose account is not active now; the
 * rows still without a slot after the batch's time budget; a seat whose units are spent (deferred
 * to the reset, as a single attempt does); and any answer that is not a quick 2xx, recorded by the
 * single path's own `recordAttempt` (retry row, auto-disable, slow check), after which that
 * endpoint's other rows of the batch go to single attempts too (they re-read the endpoint first),
 * as do the rows of an endpoint that answered slower than BATCH_SLOW_MS. Rows the batch does not
 * finish are returned as jobs to enqueue; a worker that dies mid-batch leaves claimed rows whose
 * claims lapse and open rows the sweep re-enqueues: nothing is lost (at-least-once), nothing is
 * attempted twice at once.
 */

function countBy<T>(items: readonly T[], key: (t: T) => string): Map<string, number> {
  const m = new Map<string, number>();
  for (const t of items) m.set(key(t), (m.get(key(t)) ?? 0) + 1);
  return m;
}

/**
 * A fan-out job's whole work on a batch of events: fan-out (planFanOut, writeFanOut) and the
 * first attempts. The first round is folded into the fan-out's write: the endpoints are loaded
 * and the accounts' in-flight slots taken while the bodies are ready, then the write inserts the
 * rows already claimed, so the attempts of those that got a slot leave right after the one commit
 * (no claim statement, one commit fewer before the first byte). The other rows go to the
 * process's shared rounds, claimed too. If anything fails after the write, every row written is handed to single
 * attempts (a row already closed, or under our claim, is skipped or waited for by its job).
 */
export async function fanOutAndDeliver(
  deps: Deps,
  transport: WebhookTransport,
  eventIds: readonly string[],
  rounds: SharedRounds = sharedRoundsFor(deps, transport),
): Promise<BatchOutcome & { rows: number }> {
  const started = Date.now();
  const plan = await planFanOut(deps, eventIds);
  if (plan.rows.length === 0) {
    await writeFanOut(deps, plan); // marks the events relayed
    return { rows: 0, delivered: 0, jobs: [] };
  }
  const holdMs = claimMs(deps.config);
  const [ctx, slots] = await Promise.allSettled([
    loadContexts(deps, [...new Set(plan.rows.map((r) => r.endpointId))]),
    acquireInFlightSlots(deps, countBy(plan.rows, (r) => r.accountId), roundLeaseMs(deps.config)),
  ]);
  if (slots.status === 'rejected' || ctx.status === 'rejected') {
    if (slots.status === 'fulfilled') await slots.value.release();
    throw ctx.status === 'rejected' ? ctx.reason : (slots as PromiseRejectedResult).reason;
  }
  const contexts = ctx.value;
  const leases = slots.value;
  // Every eligible row is written claimed, until the batch's time budget plus one attempt's claim
  // time: whichever round sends it (its own first round, or a shared round before the budget
  // runs out) has a whole attempt's claim left, and no round needs a claim statement. A row that
  // leaves for single attempts without an attempt here gets its claim back below.
  const claim = new Date(deps.now().getTime() + BATCH_BUDGET_MS + holdMs);
  const batch: BatchState = { contexts, out: { delivered: 0, jobs: [] }, handedOff: new Set(), started, stragglers: [], failed: null, claim, unattempted: [] };
  const { out } = batch;
  let written: FannedOutDelivery[];
  let rest: FannedOutDelivery[];
  try {
    const left = new Map(plan.rows.map((r) => [r.accountId, leases.count(r.accountId)]));
    const first = new Set<string>();
    const claimed = new Set<string>();
    for (const r of plan.rows) {
      if (!eligible(contexts.get(r.endpointId))) continue;
      claimed.add(r.id);
      const n = left.get(r.accountId) ?? 0;
      if (n > 0) {
        first.add(r.id);
        left.set(r.accountId, n - 1);
      }
    }
    written = await writeFanOut(deps, plan, { ids: claimed, until: claim }); // a failure here: the job is retried
    const round = written.filter((r) => first.has(r.id));
    rest = written.filter((r) => !first.has(r.id));
    if (round.length > 0) {
      // Answered, the round's slots go to the shared rounds at once (for this batch's other rows
      // and others'), while it records.
      const onAnswered = () => rounds.carry(leases);
      await runRound(deps, transport, round.map((r) => ({ r, batch })), leases, onAnswered)
        .catch((err: Error) => { batch.failed = err; });
    }
  } finally {
    await leases.release();
  }
  if (!batch.failed) {
    // Rows the single path must judge (endpoint gone or disabled since fan-out: dropped; account
    // not active: waits) were written unclaimed and leave at once; the rest wait for the shared
    // rounds, in fan-out order.
    const waiting = rest.filter((r) => {
      if (eligible(contexts.get(r.endpointId))) return true;
      out.jobs.push({ id: r.id });
      return false;
    });
    await rounds.run(batch, waiting);
  }
  await Promise.all(batch.stragglers); // each records itself and never rejects
  const unclaim = batch.failed ? written.map((r) => r.id) : batch.unattempted;
  // Rows handed on without an attempt get the batch's claim back (only rows still open under it),
  // so their jobs can take them at once; if this fails, the claim runs out and the sweep hands them on.
  await releaseClaims(deps.database.db, unclaim, claim).catch((err: Error) =>
    deps.logger.warn('giving back a batch\'s claims failed; its rows wait for the claim to run out', { error: err.message }));
  if (!batch.failed) return { rows: written.length, ...out };
  deps.logger.warn('batch delivery failed; its rows go to single attempts', { error: batch.failed.message });
  return { rows: written.length, delivered: out.delivered, jobs: written.map((r) => ({ id: r.id })) };
}
