import {
  accounts, and, eq, getTableColumns, inArray, runStatement, sql, webhookBodies, webhookDeliveries, webhookEndpoints, type Executor,
} from '@teamchat/db';
import { isSuccess } from './send';
import { CLAIM_AND_READ, CLOSE_DELIVERED, OPEN_ROWS_OF_ACCOUNT, RELEASE_CLAIMS, type ClaimedRead } from './statements';
import {
  isRetryableConflict, newId, OPEN_STATUSES, SLOW_MEDIAN_MS, type DeliveryContext, type DeliveryKind, type DeliveryRow, type DeliveryStatus,
} from '@teamchat/core';

/**
 * The delivery log's transitions as the engine writes them (the row types and the open statuses
 * are core's, rows.ts): every write after a claim is fenced on it.
 */

function loadQuery(db: Executor) {
  return db
    .select({ row: webhookDeliveries, endpoint: webhookEndpoints, account: { id: accounts.id, plan: accounts.plan, state: accounts.state }, body: webhookBodies.body })
    .from(webhookDeliveries)
    .innerJoin(webhookEndpoints, eq(webhookEndpoints.id, webhookDeliveries.endpointId))
    .innerJoin(accounts, eq(accounts.id, webhookDeliveries.accountId))
    .innerJoin(webhookBodies, eq(webhookBodies.id, webhookDeliveries.bodyId))
    .where(sql`${webhookDeliveries.id} = ANY(${sql.placeholder('ids')}::text[])`)
    .prepare('webhook_load_deliveries');
}
/** Built once per database handle: the query builder runs once, PostgreSQL plans the named statement once per connection. */
const loadQueries = new WeakMap<object, ReturnType<typeof loadQuery>>();

/** Rows with everything their attempts need, as they are now, in one query (a prepared, named statement), by id. */
export async function loadDeliveryContexts(db: Executor, deliveryIds: readonly string[]): Promise<Map<string, DeliveryContext>> {
  if (deliveryIds.length === 0) return new Map();
  let q = loadQueries.get(db);
  if (!q) {
    q = loadQuery(db);
    loadQueries.set(db, q);
  }
  const found = await q.execute({ ids: [...deliveryIds] });
  return new Map(found.map((c) => [c.row.id, c]));
}

/**
 * The claim stage in one round trip: claims the rows of `ids` that are open, due and not under a
 * live claim until `until`, and answers each claimed row as it is now with everything its
 * attempt needs (CLAIM_AND_READ). A row not claimed is not answered.
 */
export async function claimAndReadDeliveries(db: Executor, ids: readonly string[], now: Date, until: Date): Promise<Map<string, DeliveryContext>> {
  if (ids.length === 0) return new Map();
  return claimedContexts(await runStatement(db, CLAIM_AND_READ, [ids, until, now]));
}

/**
 * Claimed rows as their claim's statement answered them (CLAIM_AND_READ, or a fan-out's write
 * that claimed them), mapped as Drizzle maps a selected row, by id.
 */
export function claimedContexts(rows: readonly ClaimedRead[]): Map<string, DeliveryContext> {
  return new Map(rows.map((r) => {
    const row = fromJson(webhookDeliveries, r.row) as DeliveryContext['row'];
    return [row.id, { row, endpoint: fromJson(webhookEndpoints, r.endpoint) as DeliveryContext['endpoint'], account: { id: r.account_id, plan: r.plan, state: r.state }, body: r.body }];
  }));
}

/** Each table's columns (key, column), listed once: fromJson runs for every row claimed. */
const COLUMNS = new Map([webhookDeliveries, webhookEndpoints].map((t) => [t, Object.entries(getTableColumns(t))]));

/** A table's row as `row_to_json` gives it (column names, JSON values), mapped as Drizzle maps a selected row. */
function fromJson(table: typeof webhookDeliveries | typeof webhookEndpoints, json: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, column] of COLUMNS.get(table)!) {
    const value = json[column.name];
    out[key] = value === null || value === undefined ? null : column.mapFromDriverValue(value);
  }
  return out;
}

/** Open, due, unclaimed rows of one account, oldest first (a full lane's refill). */
export async function openRowsOfAccount(db: Executor, accountId: string, now: Date, limit: number): Promise<Array<{ id: string; accountId: string; endpointId: string }>> {
  return (await runStatement(db, OPEN_ROWS_OF_ACCOUNT, [accountId, now, limit])).map((r) => ({ id: r.id, accountId, endpointId: r.endpoint_id }));
}

/** What the dispatcher needs to queue a row it only knows by id: its account, endpoint and whether it is open and due. */
export type RowHead = Pick<DeliveryRow, 'id' | 'accountId' | 'endpointId' | 'status' | 'nextRetryAt' | 'claimedUntil'>;

export async function loadRowHeads(db: Executor, deliveryIds: readonly string[]): Promise<Map<string, RowHead>> {
  if (deliveryIds.length === 0) return new Map();
  const rows = await db
    .select({
      id: webhookDeliveries.id, accountId: webhookDeliveries.accountId, endpointId: webhookDeliveries.endpointId,
      status: webhookDeliveries.status, nextRetryAt: webhookDeliveries.nextRetryAt, claimedUntil: webhookDeliveries.claimedUntil,
    })
    .from(webhookDeliveries)
    .where(inArray(webhookDeliveries.id, [...deliveryIds]));
  return new Map(rows.map((r) => [r.id, r]));
}

/** Whether an attempt's answer closes its row by the one-statement path: a 2xx within the slow bar (no retry, no disabling, no slow check). */
export function deliveredQuickly(sent: { status: number | null; latencyMs: number | null }): sent is { status: number; latencyMs: number } {
  return isSuccess(sent.status) && sent.latencyMs !== null && sent.latencyMs <= SLOW_MEDIAN_MS;
}

/**
 * The common outcome, delivered (deliveredQuickly), in one statement for any number of rows,
 * each under its own claim: each row closed under its claim, with its own answer time as its
 * `attempted_at`, and its endpoint's health recorded (recordHealth's rule). Answers the ids it
 * closed; a row whose claim was lost meanwhile is not among them.
 */
export async function closeDelivered(
  db: Executor,
  input: { rows: ReadonlyArray<{ deliveryId: string; createdAt: Date; claim: Date; responseStatus: number; latencyMs: number; attemptedAt: Date }> },
): Promise<Set<string>> {
  const { rows } = input;
  // The endpoints' last success: the latest answer among the rows (a close runs for no caller's clock).
  let latest = -Infinity;
  for (const x of rows) latest = Math.max(latest, x.attemptedAt.getTime());
  const now = new Date(latest);
  const params = [
    rows.map((x) => x.deliveryId), rows.map((x) => x.claim), rows.map((x) => x.responseStatus), rows.map((x) => x.latencyMs), rows.map((x) => x.attemptedAt),
    now,
    ...createdBounds(rows.map((x) => x.createdAt)),
  ];
  // The attempts were made: their rows must be closed, or a single attempt would send them
  // again. The statement is atomic and fenced on the claims: run again on a deadlock.
  const [r] = await retryOnConflict(() => runStatement(db, CLOSE_DELIVERED, params));
  return new Set(r.ids);
}

/**
 * The partition key's bounds of some rows, for a statement to touch only their partitions:
 * [earliest, latest + 1 ms). A row's `created_at` has microseconds, its Date only milliseconds.
 */
function createdBounds(createdAt: readonly Date[]): [Date, Date] {
  let lo = Infinity;
  let hi = -Infinity;
  for (const d of createdAt) {
    const t = d.getTime();
    if (t < lo) lo = t;
    if (t > hi) hi = t;
  }
  return [new Date(lo), new Date(hi + 1)];
}

/**
 * Runs `work` (one statement or one transaction, atomic) again when PostgreSQL aborted it as a
 * deadlock or serialization victim, which is PostgreSQL choosing a victim, not a verdict; up to
 * 5 times in all.
 */
export async function retryOnConflict<T>(work: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await work();
    } catch (err) {
      if (attempt >= 5 || !isRetryableConflict(err)) throw err;
      await new Promise((resolve) => setTimeout(resolve, 5 * attempt + Math.floor(Math.random() * 10)));
    }
  }
}

/** Gives back `claim` on the rows of `ids` still open under it (a batch's rows it did not attempt). */
export async function releaseClaims(db: Executor, ids: readonly string[], claim: Date): Promise<number> {
  if (ids.length === 0) return 0;
  return (await runStatement(db, RELEASE_CLAIMS, [ids, claim])).length;
}

/** The fence every write after an attempt carries: this row, still open, still under our claim. */
function ours(deliveryId: string, claim: Date) {
  return and(eq(webhookDeliveries.id, deliveryId), eq(webhookDeliveries.claimedUntil, claim), inArray(webhookDeliveries.status, [...OPEN_STATUSES]));
}

/** Any status → `retrying` until the seat's units reset (spec: "seat's daily call units spent"). */
export async function deferForUnits(db: Executor, deliveryId: string, claim: Date, resetsAt: Date): Promise<boolean> {
  const rows = await db
    .update(webhookDeliveries)
    .set({ status: 'retrying', nextRetryAt: resetsAt, claimedUntil: null, error: 'waiting: the seat of the endpoint\'s creator has spent its call units for today' })
    .where(ours(deliveryId, claim))
    .returning({ id: webhookDeliveries.id });
  return rows.length === 1;
}

/** Writes the attempt's result and its new status; false when the claim was lost meanwhile. */
export async function closeAttempt(
  tx: Executor,
  input: { deliveryId: string; claim: Date; status: Exclude<DeliveryStatus, 'pending' | 'retrying'>; responseStatus: number | null; latencyMs: number | null; error: string | null; now: Date },
): Promise<boolean> {
  const rows = await tx
    .update(webhookDeliveries)
    .set({
      status: input.status,
      responseStatus: input.responseStatus,
      latencyMs: input.latencyMs,
      error: input.error,
      attemptedAt: input.now,
      claimedUntil: null,
      nextRetryAt: null,
    })
    .where(ours(input.deliveryId, input.claim))
    .returning({ id: webhookDeliveries.id });
  return rows.length === 1;
}

/**
 * A row that never gets its attempt (its endpoint was disabled or deleted), closed under the
 * claim the pipeline took on it: `dead`, no further attempt.
 */
export async function closeWithoutAttempt(db: Executor, deliveryId: string, error: string, claim: Date): Promise<boolean> {
  const rows = await db
    .update(webhookDeliveries)
    .set({ status: 'dead', error, nextRetryAt: null, claimedUntil: null, attemptedAt: null })
    .where(ours(deliveryId, claim))
    .returning({ id: webhookDeliveries.id });
  return rows.length === 1;
}

/** The next attempt of a chain, waiting as `retrying` until `at`. */
export async function insertRetry(tx: Executor, prev: DeliveryRow, at: Date): Promise<string> {
  const id = newId('delivery');
  await tx.insert(webhookDeliveries).values({
    id,
    accountId: prev.accountId,
    endpointId: prev.endpointId,
    eventId: prev.eventId,
    eventType: prev.eventType,
    bodyId: prev.bodyId,
    kind: prev.kind,
    chainId: prev.chainId,
    attempt: prev.attempt + 1,
    status: 'retrying',
    nextRetryAt: at,
    eventCreatedAt: prev.eventCreatedAt,
  });
  return id;
}

/** A new chain's first row (`pending`): fan-out, test events and replays. */
export async function insertFirstAttempt(
  tx: Executor,
  input: { accountId: string; endpointId: string; eventId: string; eventType: string; bodyId: string; kind: DeliveryKind; eventCreatedAt: Date },
): Promise<DeliveryRow> {
  const id = newId('delivery');
  const [row] = await tx
    .insert(webhookDeliveries)
    .values({ ...input, id, chainId: id, attempt: 1, status: 'pending' })
    .returning();
  return row;
}

/** A test event that could not be attempted now (no in-flight slot in time): `failed`, never retried. */
export async function failTestWithoutAttempt(db: Executor, deliveryId: string, error: string, now: Date): Promise<void> {
  await db
    .update(webhookDeliveries)
    .set({ status: 'failed', error, nextRetryAt: null, claimedUntil: null, attemptedAt: now })
    .where(and(eq(webhookDeliveries.id, deliveryId), inArray(webhookDeliveries.status, [...OPEN_STATUSES])));
}
