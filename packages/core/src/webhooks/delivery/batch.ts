import { accounts, eq, inArray, webhookEndpoints } from '@teamchat/db';
import type { Deps } from '../../context';
import { observeAttempt, recordAttempt } from './attempt';
import { planFanOut, writeFanOut, type FannedOutDelivery } from './fan-out';
import { acquireInFlightSlots, type Leases } from './in-flight';
import { claimMs } from './schedule';
import { prepareEndpoint, sendPrepared, type PreparedEndpoint, type SendResult } from './send';
import { chargeDeliveryUnits } from './units';
import { claimDeliveries, closeDelivered, deferForUnits, deliveredQuickly, type DeliveryContext, type EndpointRow } from './store';
import type { WebhookTransport } from './transport';

/**
 * The first attempts of a fan-out batch, made by the fan-out job itself (issue 11 throughput):
 * the same rules as one attempt (attempt.ts) with every round trip taken once per ROUND of the
 * batch instead of once per delivery:
 *
 *   one script takes in-flight slots for every account of the round (each account's cap, shared
 *   with single attempts, across processes) → one statement claims the round's rows → one Redis
 *   round trip charges each endpoint creator's seat its attempts → the POSTs, all at once →
 *   one statement closes the 2xx answers within the slow bar `delivered` (and records health) →
 *   one round trip gives the slots back.
 *
 * Anything out of the common case leaves the batch for the single-attempt path, which owns those
 * rules: a delivery whose endpoint is disabled, deleted or whose account is not active now; the
 * rows of an account none of whose slots is free before the batch's time budget runs out; a
 * seat whose units are spent (deferred to the reset, as a single attempt does); and any answer
 * that is not a quick 2xx, recorded by the single path's own `recordAttempt` (retry row,
 * auto-disable, slow check), after which that endpoint's other rows of the batch go to single
 * attempts too (they re-read the endpoint first), as do the rows of an endpoint that answered
 * slower than BATCH_SLOW_MS (a round waits for its slowest answer). Rows the batch does not finish are returned as
 * jobs to enqueue; a worker that dies mid-batch leaves claimed rows whose claims lapse and open
 * rows the sweep re-enqueues: nothing is lost (at-least-once), nothing is attempted twice at once.
 */

/**
 * After this long, a batch stops starting rounds and hands its remaining rows to single attempts
 * (below the sweep's 10 s grace, so the sweep never re-enqueues rows a batch still holds).
 */
export const BATCH_BUDGET_MS = 8_000;
/** An endpoint whose attempt took longer than this leaves the batch: a slow receiver never holds up the others' rounds. */
export const BATCH_SLOW_MS = 500;
/** Pause before the next round when no account of the last one got a slot. */
const NO_SLOT_PAUSE_MS = 25;

export interface BatchOutcome {
  /** rows delivered by the batch itself */
  delivered: number;
  /** rows for the single-attempt path (delivery jobs): not attempted here, or a retry row (at) */
  jobs: Array<{ id: string; at?: Date | null }>;
}

type Context = { endpoint: EndpointRow; account: { id: string; plan: string; state: string } };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function eligible(c: Context | undefined): c is Context {
  return !!c && c.endpoint.enabled && c.endpoint.deletedAt === null && c.account.state === 'active';
}

/** The endpoints (and their accounts) a batch's attempts need, in one query. */
async function loadContexts(deps: Deps, endpointIds: string[]): Promise<Map<string, Context>> {
  const found = await deps.database.db
    .select({ endpoint: webhookEndpoints, account: { id: accounts.id, plan: accounts.plan, state: accounts.state } })
    .from(webhookEndpoints)
    .innerJoin(accounts, eq(accounts.id, webhookEndpoints.accountId))
    .where(inArray(webhookEndpoints.id, endpointIds));
  return new Map<string, Context>(found.map((c) => [c.endpoint.id, c]));
}

function countBy<T>(items: readonly T[], key: (t: T) => string): Map<string, number> {
  const m = new Map<string, number>();
  for (const t of items) m.set(key(t), (m.get(key(t)) ?? 0) + 1);
  return m;
}

/**
 * A fan-out job's whole work on a batch of events: fan-out (planFanOut, writeFanOut) and the
 * first attempts. The first round is folded into the fan-out's write: the endpoints are loaded
 * and the accounts' in-flight slots taken while the bodies are ready, then the write inserts the
 * rows that got a slot already claimed, so their attempts leave right after the one commit (no
 * claim statement, one commit fewer before the first byte). The other rows follow in rounds
 * (deliverInRounds). If anything fails after the write, every row written is handed to
 * single attempts (a row already closed, or under our claim, is skipped or waited for by its job).
 */
export async function fanOutAndDeliver(deps: Deps, transport: WebhookTransport, eventIds: readonly string[]): Promise<BatchOutcome & { rows: number }> {
  const started = Date.now();
  const plan = await planFanOut(deps, eventIds);
  if (plan.rows.length === 0) {
    await writeFanOut(deps, plan); // marks the events relayed
    return { rows: 0, delivered: 0, jobs: [] };
  }
  const holdMs = claimMs(deps.config);
  const [ctx, slots] = await Promise.allSettled([
    loadContexts(deps, [...new Set(plan.rows.map((r) => r.endpointId))]),
    acquireInFlightSlots(deps, countBy(plan.rows, (r) => r.accountId), holdMs),
  ]);
  if (slots.status === 'rejected' || ctx.status === 'rejected') {
    if (slots.status === 'fulfilled') await slots.value.release();
    throw ctx.status === 'rejected' ? ctx.reason : (slots as PromiseRejectedResult).reason;
  }
  const contexts = ctx.value;
  const leases = slots.value;
  const state: BatchState = { contexts, out: { delivered: 0, jobs: [] }, handedOff: new Set(), started, stragglers: [] };
  const { out } = state;
  let written: FannedOutDelivery[];
  let rest: FannedOutDelivery[];
  let failed: Error | null = null;
  try {
    const left = new Map(leases.granted);
    const first = new Set<string>();
    for (const r of plan.rows) {
      const n = left.get(r.accountId) ?? 0;
      if (n > 0 && eligible(contexts.get(r.endpointId))) {
        first.add(r.id);
        left.set(r.accountId, n - 1);
      }
    }
    const claimAt = deps.now();
    const claim = new Date(claimAt.getTime() + holdMs);
    written = await writeFanOut(deps, plan, { ids: first, until: claim }); // a failure here: the job is retried
    const round = written.filter((r) => first.has(r.id));
    rest = written.filter((r) => !first.has(r.id));
    if (round.length > 0) {
      await runRound(deps, transport, round, state, leases, { claim, claimAt })
        .catch((err: Error) => { failed = err; });
    }
  } finally {
    await leases.release();
  }
  if (!failed) {
    await deliverInRounds(deps, transport, rest, state)
      .catch((err: Error) => { failed = err; });
  }
  await Promise.all(state.stragglers); // each records itself and never rejects
  if (failed) {
    deps.logger.warn('batch delivery failed; its rows go to single attempts', { error: (failed as Error).message });
    return { rows: written.length, delivered: out.delivered, jobs: written.map((r) => ({ id: r.id })) };
  }
  return { rows: written.length, ...out };
}

/** The state a batch's rounds share (fanOutAndDeliver starts it). */
interface BatchState {
  contexts: Map<string, Context>;
  out: BatchOutcome;
  /** endpoints whose rows now go to single attempts */
  handedOff: Set<string>;
  started: number;
  /** attempts that outlived their round; fanOutAndDeliver awaits them */
  stragglers: Array<Promise<void>>;
}

/** The batch's rows after its first round (written unclaimed), in rounds. */
async function deliverInRounds(deps: Deps, transport: WebhookTransport, rows: readonly FannedOutDelivery[], state: BatchState): Promise<void> {
  const { contexts, out, handedOff, started } = state;
  if (rows.length === 0) return;

  // Rows the single path must judge (endpoint gone or disabled since fan-out: dropped; account
  // not active: waits) leave at once; the rest queue per account, in fan-out order.
  const queues = new Map<string, FannedOutDelivery[]>();
  for (const r of rows) {
    if (!eligible(contexts.get(r.endpointId))) {
      out.jobs.push({ id: r.id });
      continue;
    }
    const q = queues.get(r.accountId) ?? [];
    q.push(r);
    queues.set(r.accountId, q);
  }

  const holdMs = claimMs(deps.config);
  for (;;) {
    for (const [accountId, q] of queues) {
      const keep = q.filter((r) => !handedOff.has(r.endpointId));
      for (const r of q) if (handedOff.has(r.endpointId)) out.jobs.push({ id: r.id });
      if (keep.length === 0) queues.delete(accountId);
      else queues.set(accountId, keep);
    }
    if (queues.size === 0) break;
    if (Date.now() - started >= BATCH_BUDGET_MS) {
      for (const q of queues.values()) for (const r of q) out.jobs.push({ id: r.id });
      break;
    }
    const leases = await acquireInFlightSlots(deps, new Map([...queues].map(([a, q]) => [a, q.length])), holdMs);
    try {
      const round: FannedOutDelivery[] = [];
      for (const [accountId, q] of queues) round.push(...q.splice(0, leases.granted.get(accountId) ?? 0));
      if (round.length === 0) {
        await sleep(NO_SLOT_PAUSE_MS);
        continue;
      }
      await runRound(deps, transport, round, state, leases);
    } finally {
      await leases.release();
    }
  }
}

/** One round: claim (unless the fan-out's write did), charge, send, record. Every row of `round` holds one of its account's slots. */
async function runRound(
  deps: Deps,
  transport: WebhookTransport,
  round: FannedOutDelivery[],
  state: BatchState,
  /** the round's slots: an attempt that outlives the round keeps its own */
  leases: Leases,
  /** the rows were written already claimed (the fan-out's first round) */
  preclaimed?: { claim: Date; claimAt: Date },
): Promise<void> {
  const { contexts, out, handedOff, stragglers } = state;
  const holdMs = claimMs(deps.config);
  const db = deps.database.db;
  const claimAt = preclaimed?.claimAt ?? deps.now();
  const claim = preclaimed?.claim ?? new Date(claimAt.getTime() + holdMs);
  // The URL guard and the secrets once per endpoint for the round (its attempts leave together),
  // resolved while the claim and the charge are under way; nothing is sent before both.
  const prepared = new Map<string, Promise<PreparedEndpoint>>();
  for (const r of round) {
    if (!prepared.has(r.endpointId)) {
      const p = prepareEndpoint(deps.config, contexts.get(r.endpointId)!.endpoint, claimAt);
      p.catch(() => undefined); // awaited below (or not at all, when no row of the endpoint is claimed)
      prepared.set(r.endpointId, p);
    }
  }
  const claimedIds = preclaimed
    ? new Set(round.map((r) => r.id))
    : await claimDeliveries(db, round.map((r) => r.id), claimAt, claim);
  // A row not claimed is under another worker's claim (the sweep handed it over): that one records it.
  let claimed = round.filter((r) => claimedIds.has(r.id));
  if (claimed.length === 0) return;

  // One call unit per attempt on the seat of the endpoint's creator, each seat charged at once.
  const seats = new Map<string, FannedOutDelivery[]>();
  for (const r of claimed) {
    const key = `${r.accountId}|${contexts.get(r.endpointId)!.endpoint.createdByUserId}`;
    const group = seats.get(key);
    if (group) group.push(r);
    else seats.set(key, [r]);
  }
  const groups = [...seats.values()];
  const charged = await chargeDeliveryUnits(deps, groups.map((g) => {
    const { account, endpoint } = contexts.get(g[0].endpointId)!;
    return { accountId: account.id, plan: account.plan, seatUserId: endpoint.createdByUserId, units: g.length };
  }));
  const refused = new Set<string>();
  for (const [n, g] of groups.entries()) {
    if (charged[n].allowed) continue;
    // Not enough units for the whole group: these rows wait for the reset, as a single attempt's do.
    for (const r of g) {
      refused.add(r.id);
      await deferForUnits(db, r.id, claim, charged[n].resetsAt!);
      out.jobs.push({ id: r.id, at: charged[n].resetsAt });
    }
  }
  claimed = claimed.filter((r) => !refused.has(r.id));

  const sendAt = deps.now();
  const attempts = claimed.map((r) => {
    const ctx = contextOf(r, contexts.get(r.endpointId)!, claim, sendAt);
    const a: { r: FannedOutDelivery; ctx: DeliveryContext; result: SendResult | null; answered: Promise<SendResult> } = { r, ctx, result: null, answered: null! };
    a.answered = prepared.get(r.endpointId)!
      .then((p) => sendPrepared(transport, ctx, p, sendAt))
      .catch((err: Error): SendResult => ({ status: null, latencyMs: null, error: `attempt failed: ${err.message}` }))
      .then((result) => {
        a.result = result;
        return result;
      });
    return a;
  });
  // The round waits for its answers up to BATCH_SLOW_MS: an attempt still open then (a hanging or
  // slow receiver) leaves the round with its claim and its in-flight slot, and records itself
  // when it ends; its endpoint's other rows go to single attempts. The batch awaits it at the end.
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    Promise.all(attempts.map((a) => a.answered)),
    new Promise((resolve) => { timer = setTimeout(resolve, BATCH_SLOW_MS); }),
  ]);
  clearTimeout(timer);
  const sent = attempts.filter((a): a is typeof a & { result: SendResult } => a.result !== null);
  for (const a of attempts) {
    if (a.result !== null) continue;
    handedOff.add(a.r.endpointId);
    const giveBack = leases.detach(a.r.accountId);
    stragglers.push(a.answered
      .then(async (result) => {
        const outcome = await recordAttempt(deps, a.ctx, claim, result, true);
        if (outcome.kind === 'done' && outcome.status === 'delivered') out.delivered += 1;
        if (outcome.kind === 'done' && outcome.next) out.jobs.push(outcome.next);
      })
      .catch((err: Error) => {
        deps.logger.warn('recording a slow attempt failed; its claim lapses and it is attempted again', { delivery_id: a.r.id, endpoint_id: a.r.endpointId, error: err.message });
      })
      .finally(giveBack));
  }

  const quick = sent.filter((s) => deliveredQuickly(s.result));
  if (quick.length > 0) {
    const now = deps.now();
    const ids = await closeDelivered(db, {
      claim, now, rows: quick.map((s) => ({ deliveryId: s.r.id, responseStatus: s.result.status!, latencyMs: s.result.latencyMs! })),
    });
    for (const s of quick) {
      if (!ids.has(s.r.id)) continue; // dropped meanwhile (endpoint deleted or disabled): nothing to record
      observeAttempt(deps, s.ctx.row, 'delivered', s.result.latencyMs, now);
      out.delivered += 1;
    }
  }
  for (const s of sent) {
    if ((s.result.latencyMs ?? 0) > BATCH_SLOW_MS) handedOff.add(s.r.endpointId);
    if (deliveredQuickly(s.result)) continue;
    // Not a quick 2xx: the single path's own recording (retry row, auto-disable, slow check).
    const outcome = await recordAttempt(deps, s.ctx, claim, s.result, true);
    handedOff.add(s.r.endpointId);
    if (outcome.kind === 'done' && outcome.status === 'delivered') out.delivered += 1;
    if (outcome.kind === 'done' && outcome.next) out.jobs.push(outcome.next);
  }
}

/** The attempt's context as loadDeliveryContext would read it, built from what the fan-out wrote. */
function contextOf(r: FannedOutDelivery, c: Context, claim: Date, now: Date): DeliveryContext {
  return {
    row: {
      id: r.id, seq: 0, accountId: r.accountId, endpointId: r.endpointId, eventId: r.eventId, eventType: r.eventType, bodyId: r.bodyId,
      kind: 'event', chainId: r.id, attempt: 1, status: 'pending', nextRetryAt: null, claimedUntil: claim, responseStatus: null,
      latencyMs: null, error: null, eventCreatedAt: r.eventCreatedAt, createdAt: now, attemptedAt: null,
    },
    endpoint: c.endpoint,
    account: c.account,
    body: r.body,
  };
}
