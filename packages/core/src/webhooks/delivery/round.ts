import { accounts, eq, sql, webhookEndpoints } from '@teamchat/db';
import type { Deps } from '../../context';
import { observeAttempt, recordAttempt } from './attempt';
import type { FannedOutDelivery } from './fan-out';
import type { Leases } from './in-flight';
import { prepareEndpoint, sendPrepared, type PreparedEndpoint, type SendResult } from './send';
import { closeDelivered, deferForUnits, deliveredQuickly, type DeliveryContext, type EndpointRow } from './store';
import type { WebhookTransport } from './transport';
import { chargeDeliveryUnits, refundDeliveryUnits, type DeliveryCharge } from './units';

/**
 * One ROUND of first attempts (issue 11 throughput): the rules of one attempt (attempt.ts) with
 * every round trip taken once for the whole round instead of once per delivery. Every row was
 * written already claimed by its batch (batch.ts: the claim covers the batch's time budget plus
 * one attempt, so no round needs a claim statement) and the caller holds one in-flight slot per
 * row (its account's cap, across processes); then one Redis round trip charges each endpoint
 * creator's seat its attempts → the POSTs, all at once → one statement closes the 2xx answers
 * within the slow bar `delivered` (and records health). Anything else is recorded by the single
 * path's own `recordAttempt`. A round may hold rows of several fan-out batches
 * (shared-rounds.ts): each row reports to its own batch, under its batch's claim.
 */

/** An endpoint whose attempt took longer than this leaves the batch: a slow receiver never holds up the others' rounds. */
export const BATCH_SLOW_MS = 500;

export type Context = { endpoint: EndpointRow; account: { id: string; plan: string; state: string } };

export interface BatchOutcome {
  /** rows delivered by the batch itself */
  delivered: number;
  /** rows for the single-attempt path (delivery jobs): not attempted here, or a retry row (at) */
  jobs: Array<{ id: string; at?: Date | null }>;
}

/** What one fan-out batch's rounds share: its endpoints, its outcome, and what left it. */
export interface BatchState {
  contexts: Map<string, Context>;
  out: BatchOutcome;
  /** endpoints whose rows now go to single attempts (a slow or failing answer) */
  handedOff: Set<string>;
  /** Date.now() when the batch began */
  started: number;
  /** attempts that outlived their round; fanOutAndDeliver awaits them (each records itself, never rejects) */
  stragglers: Array<Promise<void>>;
  /** a round holding rows of this batch failed (database or Redis): every row written goes to single attempts */
  failed: Error | null;
  /** the claim every eligible row of the batch was written under (claimed_until) */
  claim: Date;
  /** rows that left for single attempts without an attempt here: their claims are given back */
  unattempted: string[];
}

/** A row of a round and the batch it reports to. */
export interface Item {
  r: FannedOutDelivery;
  batch: BatchState;
}

export function eligible(c: Context | undefined): c is Context {
  return !!c && c.endpoint.enabled && c.endpoint.deletedAt === null && c.account.state === 'active';
}

const contextOfItem = (i: Item): Context => i.batch.contexts.get(i.r.endpointId)!;

function contextsQuery(db: Deps['database']['db']) {
  return db
    .select({ endpoint: webhookEndpoints, account: { id: accounts.id, plan: accounts.plan, state: accounts.state } })
    .from(webhookEndpoints)
    .innerJoin(accounts, eq(accounts.id, webhookEndpoints.accountId))
    .where(sql`${webhookEndpoints.id} = ANY(${sql.placeholder('ids')}::text[])`)
    .prepare('webhook_batch_contexts');
}
/** Built once per database handle (as loadDeliveryContext's): the query builder runs once, PostgreSQL plans it once per connection. */
const contextsQueries = new WeakMap<object, ReturnType<typeof contextsQuery>>();

/** The endpoints (and their accounts) as they are now, in one query: what a batch's attempts need. */
export async function loadContexts(deps: Deps, endpointIds: string[]): Promise<Map<string, Context>> {
  const db = deps.database.db;
  let q = contextsQueries.get(db);
  if (!q) {
    q = contextsQuery(db);
    contextsQueries.set(db, q);
  }
  const found = await q.execute({ ids: endpointIds });
  return new Map<string, Context>(found.map((c) => [c.endpoint.id, c]));
}

/**
 * One round: charge, send, record. Every item is under its batch's claim and holds one of its
 * account's slots in `leases`.
 */
export async function runRound(
  deps: Deps,
  transport: WebhookTransport,
  round: readonly Item[],
  /** the round's slots: an attempt that outlives the round keeps its own */
  leases: Leases,
  /**
   * Called once the round's answers are in (or it ends without sending), before they are
   * recorded: its attempts are no longer in flight, so the caller gives the slots back and may
   * start the next round while this one records.
   */
  onAnswered?: () => void,
  /**
   * The round's endpoints and accounts read again (shared rounds: rows that waited). Read while
   * the units are charged; the round then sends with what it read, and a row whose endpoint or
   * account is no longer eligible is not sent: it leaves for a single attempt, its unit given back.
   */
  recheck?: Promise<Map<string, Context>>,
): Promise<void> {
  const db = deps.database.db;
  const preparedAt = deps.now();
  // The URL guard and the secrets once per endpoint for the round (its attempts leave together),
  // resolved while the charge is under way; nothing is sent before it.
  const prepared = new Map<string, Promise<PreparedEndpoint>>();
  const prepare = (items: readonly Item[]) => {
    for (const i of items) {
      if (!prepared.has(i.r.endpointId)) {
        const p = prepareEndpoint(deps.config, contextOfItem(i).endpoint, preparedAt);
        p.catch(() => undefined); // awaited below (or not at all, when no row of the endpoint is charged)
        prepared.set(i.r.endpointId, p);
      }
    }
  };
  if (!recheck) prepare(round);
  else recheck.catch(() => undefined); // awaited after the charge
  if (round.length === 0) {
    onAnswered?.();
    return;
  }

  // One call unit per attempt on the seat of the endpoint's creator, each seat charged at once.
  const { groups, charges: wanted } = bySeat(round);
  const chargedAt = deps.now();
  const charges = await chargeDeliveryUnits(deps, wanted, chargedAt);
  const refused = new Set<Item>();
  for (const [n, g] of groups.entries()) {
    if (charges[n].allowed) continue;
    // Not enough units for the whole group: these rows wait for the reset, as a single attempt's do.
    for (const i of g) {
      refused.add(i);
      await deferForUnits(db, i.r.id, i.batch.claim, charges[n].resetsAt!);
      i.batch.out.jobs.push({ id: i.r.id, at: charges[n].resetsAt });
    }
  }
  let charged = refused.size === 0 ? round : round.filter((i) => !refused.has(i));
  if (recheck) charged = await afterRecheck(deps, charged, recheck, chargedAt);
  prepare(charged);

  const sendAt = deps.now();
  const attempts = charged.map((i) => {
    const ctx = contextOf(i.r, contextOfItem(i), i.batch.claim, sendAt);
    const a: { i: Item; ctx: DeliveryContext; result: SendResult | null; answered: Promise<SendResult> } = { i, ctx, result: null, answered: null! };
    a.answered = prepared.get(i.r.endpointId)!
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
  // when it ends; its endpoint's other rows go to single attempts. Its batch awaits it at the end.
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    Promise.all(attempts.map((a) => a.answered)),
    new Promise((resolve) => { timer = setTimeout(resolve, BATCH_SLOW_MS); }),
  ]);
  clearTimeout(timer);
  const sent = attempts.filter((a): a is typeof a & { result: SendResult } => a.result !== null);
  for (const a of attempts) {
    if (a.result !== null) continue;
    const { batch, r } = a.i;
    batch.handedOff.add(r.endpointId);
    const giveBack = leases.detach(r.accountId);
    batch.stragglers.push(a.answered
      .then(async (result) => {
        const outcome = await recordAttempt(deps, a.ctx, batch.claim, result, true);
        if (outcome.kind === 'done' && outcome.status === 'delivered') batch.out.delivered += 1;
        if (outcome.kind === 'done' && outcome.next) batch.out.jobs.push(outcome.next);
      })
      .catch((err: Error) => {
        deps.logger.warn('recording a slow attempt failed; its claim lapses and it is attempted again', { delivery_id: r.id, endpoint_id: r.endpointId, error: err.message });
      })
      .finally(giveBack));
  }
  // Any answer that is not a quick 2xx (or came slowly) sends its endpoint's other rows to single
  // attempts, decided before the next round may start (a 410 disables the endpoint when recorded).
  for (const s of sent) {
    if (!deliveredQuickly(s.result) || (s.result.latencyMs ?? 0) > BATCH_SLOW_MS) s.i.batch.handedOff.add(s.i.r.endpointId);
  }
  onAnswered?.();

  const quick = sent.filter((s) => deliveredQuickly(s.result));
  if (quick.length > 0) {
    const now = deps.now();
    const ids = await closeDelivered(db, {
      now, rows: quick.map((s) => ({ deliveryId: s.i.r.id, claim: s.i.batch.claim, responseStatus: s.result.status!, latencyMs: s.result.latencyMs! })),
    });
    for (const s of quick) {
      if (!ids.has(s.i.r.id)) continue; // dropped meanwhile (endpoint deleted or disabled): nothing to record
      observeAttempt(deps, s.ctx.row, 'delivered', s.result.latencyMs, now);
      s.i.batch.out.delivered += 1;
    }
  }
  for (const s of sent) {
    if (deliveredQuickly(s.result)) continue;
    // Not a quick 2xx: the single path's own recording (retry row, auto-disable, slow check).
    const { batch } = s.i;
    const outcome = await recordAttempt(deps, s.ctx, batch.claim, s.result, true);
    if (outcome.kind === 'done' && outcome.status === 'delivered') batch.out.delivered += 1;
    if (outcome.kind === 'done' && outcome.next) batch.out.jobs.push(outcome.next);
  }
}

/** A round's rows by the seat their attempts are charged to (the endpoint creator's), with each seat's charge. */
function bySeat(items: readonly Item[]): { groups: Item[][]; charges: DeliveryCharge[] } {
  const seats = new Map<string, Item[]>();
  for (const i of items) {
    const key = `${i.r.accountId}|${contextOfItem(i).endpoint.createdByUserId}`;
    const group = seats.get(key);
    if (group) group.push(i);
    else seats.set(key, [i]);
  }
  const groups = [...seats.values()];
  return {
    groups,
    charges: groups.map((g) => {
      const { account, endpoint } = contextOfItem(g[0]);
      return { accountId: account.id, plan: account.plan, seatUserId: endpoint.createdByUserId, units: g.length };
    }),
  };
}

/**
 * The charged rows of a round whose endpoints were read again meanwhile: those still eligible,
 * with their batches' contexts updated to what was read; the others leave for single attempts
 * (their batch hands them on and gives their claim back) and their units are given back. If the
 * read failed, every unit is given back and the round fails.
 */
async function afterRecheck(deps: Deps, charged: readonly Item[], recheck: Promise<Map<string, Context>>, chargedAt: Date): Promise<readonly Item[]> {
  // the units were charged under the contexts the rows were charged with: given back to those seats
  const refund = (items: readonly Item[]) => refundDeliveryUnits(deps, bySeat(items).charges, chargedAt);
  let fresh: Map<string, Context>;
  try {
    fresh = await recheck;
  } catch (err) {
    await refund(charged).catch(() => undefined);
    throw err;
  }
  const gone: Item[] = [];
  const send = charged.filter((i) => {
    const c = fresh.get(i.r.endpointId);
    if (eligible(c)) return true;
    gone.push(i);
    return false;
  });
  if (gone.length > 0) {
    await refund(gone).catch((err: Error) => deps.logger.warn('giving back units of rows not sent failed', { error: err.message }));
    for (const i of gone) {
      i.batch.out.jobs.push({ id: i.r.id });
      i.batch.unattempted.push(i.r.id);
    }
  }
  for (const i of send) i.batch.contexts.set(i.r.endpointId, fresh.get(i.r.endpointId)!);
  return send;
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
