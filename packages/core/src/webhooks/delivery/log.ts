import { sql, type Db, type Executor } from '@teamchat/db';
import type { DeliveryRow } from './rows';
import { DELIVERY_LOG_RETENTION_MS } from './schedule';
import { sqlStateOf } from '../../errors';

/** One entry of GET .../webhooks/{endpointId}/deliveries (docs/webhooks.md lists the fields). */
export interface DeliveryView {
  id: string;
  event_id: string;
  event_type: string;
  kind: string;
  attempt: number;
  status: string;
  next_retry_at: string | null;
  response_status: number | null;
  latency_ms: number | null;
  error: string | null;
  created_at: string;
  attempted_at: string | null;
}

export function toDeliveryView(r: DeliveryRow): DeliveryView {
  return {
    id: r.id,
    event_id: r.eventId,
    event_type: r.eventType,
    kind: r.kind,
    attempt: r.attempt,
    status: r.status,
    next_retry_at: r.nextRetryAt?.toISOString() ?? null,
    response_status: r.responseStatus,
    latency_ms: r.latencyMs,
    error: r.error,
    created_at: r.createdAt.toISOString(),
    attempted_at: r.attemptedAt?.toISOString() ?? null,
  };
}

/** Weeks of partitions the maintenance pass keeps made ahead of the current one. */
export const DELIVERY_LOG_WEEKS_AHEAD = 2;
const WEEK_MS = 7 * 24 * 3_600_000;
const PARTITION_NAME = /^webhook_deliveries_w(\d{4})(\d{2})(\d{2})$/;

/**
 * The oldest `created_at` the delivery log shows (spec: kept 30 days): every read of the log
 * (page, one delivery, replay, bulk replay) is bounded by it, so the log keeps exactly 30 days
 * whatever week's partition is still on disk (docs/webhooks.md "Retention").
 */
export function deliveryLogFloor(now: Date): Date {
  return new Date(now.getTime() - DELIVERY_LOG_RETENTION_MS);
}

/** Makes the weekly partitions of the delivery log from the current week to DELIVERY_LOG_WEEKS_AHEAD ahead; answers how many it made. */
export async function ensureDeliveryLogPartitions(db: Executor, now: Date): Promise<number> {
  const r = await db.execute<{ made: number }>(sql`SELECT webhook_deliveries_ensure_partitions(${now}, ${DELIVERY_LOG_WEEKS_AHEAD}) AS made`);
  return Number(r.rows[0]?.made ?? 0);
}

/** Rows changed in a partition since its last ANALYZE before the maintenance pass analyzes it: at least this many, and ANALYZE_SHARE of its rows. */
export const ANALYZE_AFTER_ROWS = 1000;
const ANALYZE_SHARE = 0.1;

/**
 * ANALYZEs each weekly partition of the log that changed much since its last statistics (the
 * rule autovacuum applies, run within one maintenance pass instead of its minute-long naps): a
 * backlog's fan-out writes 100,000 rows in seconds into a partition whose statistics describe it
 * empty, and until they are renewed the planner guesses a lookup by id returns hundreds of rows
 * and picks hash joins and parallel scans for every batch of the engine (docs/performance.md
 * "Isolation between accounts"). One process at a time (an advisory lock); answers the
 * partitions analyzed.
 */
export async function analyzeChangedLogPartitions(db: Db): Promise<string[]> {
  return db.transaction(async (tx) => {
    const locked = await tx.execute<{ ok: boolean }>(sql`SELECT pg_try_advisory_xact_lock(hashtext('webhook_log_analyze')) AS ok`);
    if (!locked.rows[0]?.ok) return [];
    const changed = await tx.execute<{ name: string }>(sql`
      SELECT c.relname AS name
        FROM pg_inherits i
        JOIN pg_class c ON c.oid = i.inhrelid
        JOIN pg_stat_user_tables s ON s.relid = c.oid
       WHERE i.inhparent = 'webhook_deliveries'::regclass
         AND s.n_mod_since_analyze >= GREATEST(${sql.raw(String(ANALYZE_AFTER_ROWS))}, ${sql.raw(String(ANALYZE_SHARE))} * s.n_live_tup)`);
    const names = changed.rows.map((r) => r.name).filter((n) => PARTITION_NAME.test(n) || n === 'webhook_deliveries_default');
    for (const name of names) await tx.execute(sql.raw(`ANALYZE "${name}"`));
    return names;
  });
}

/** The log's weekly partitions with their ranges (from their names, which the partition function writes). */
export async function deliveryLogPartitions(db: Executor): Promise<Array<{ name: string; from: Date; to: Date }>> {
  const r = await db.execute<{ name: string }>(sql`
    SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
     WHERE i.inhparent = 'webhook_deliveries'::regclass`);
  const out: Array<{ name: string; from: Date; to: Date }> = [];
  for (const { name } of r.rows) {
    const m = PARTITION_NAME.exec(name);
    if (!m) continue; // the default partition
    const from = new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])));
    out.push({ name, from, to: new Date(from.getTime() + WEEK_MS) });
  }
  return out.sort((a, b) => a.from.getTime() - b.from.getTime());
}

/**
 * How long the purge's detach of a partition waits for the log's lock. Every statement of the
 * log that comes meanwhile queues behind the waiting detach (PostgreSQL's lock queue), so this
 * is a stall of every delivery, the API's log reads included: a partition not detached within it
 * is tried again at the next maintenance pass (5 s later), when the log may be quieter.
 */
export const PURGE_LOCK_WAIT_MS = 100;

/**
 * Retention (spec: delivery log kept 30 days). Each weekly partition whose whole week is older
 * than `before` is detached and dropped (no row is deleted, nothing to vacuum), unless it still
 * holds open rows (never purged: an account suspended for weeks keeps its deliveries waiting),
 * in which case its closed rows are deleted in batches instead. Rows of the default partition
 * (outside every week) are deleted in batches the same way. Then bodies no attempt points to any
 * more, and the rollups' hours older than `before`. Detaching takes a brief exclusive lock on the
 * log, and while it waits for running statements every new statement of the log queues behind
 * it: so it waits at most `lockTimeoutMs` (PURGE_LOCK_WAIT_MS), else the partition is left
 * (`busy`) for the next pass. Answers the rows purged and the partitions left busy.
 */
export async function purgeDeliveryLog(db: Executor, before: Date, batch = 5000, lockTimeoutMs = PURGE_LOCK_WAIT_MS): Promise<{ purged: number; busy: number }> {
  const weeks = await detachExpiredLogWeeks(db, before, lockTimeoutMs);
  let purged = weeks.purged;
  for (const name of weeks.open) purged += await deleteClosedRows(db, sql.identifier(name), before, batch);
  purged += await deleteClosedRows(db, sql.identifier('webhook_deliveries_default'), before, batch);
  await db.execute(sql`
    DELETE FROM webhook_bodies b WHERE b.id IN (
      SELECT b2.id FROM webhook_bodies b2
       WHERE b2.created_at < ${before}
         AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.body_id = b2.id)
       LIMIT ${batch})`);
  await db.execute(sql`DELETE FROM webhook_endpoint_hours WHERE hour < ${before}`);
  return { purged, busy: weeks.busy };
}

/**
 * The purge's weeks (purgeDeliveryLog; alone, the worker's warm-up): each week older than
 * `before` detached and dropped, each DDL statement waiting at most `lockTimeoutMs` for its locks,
 * and nothing else, so it never waits on another transaction for longer. Answers the rows
 * dropped, the weeks left busy, and the weeks kept because they still hold open rows (never
 * dropped: the purge deletes their closed rows instead).
 */
export async function detachExpiredLogWeeks(db: Executor, before: Date, lockTimeoutMs = PURGE_LOCK_WAIT_MS): Promise<{ purged: number; busy: number; open: string[] }> {
  let purged = 0;
  let busy = 0;
  const open: string[] = [];
  for (const p of await deliveryLogPartitions(db)) {
    if (p.to.getTime() > before.getTime()) continue;
    const openRow = await db.execute(sql`SELECT 1 FROM ${sql.identifier(p.name)} WHERE status IN ('pending', 'retrying') LIMIT 1`);
    if (openRow.rows.length > 0) {
      open.push(p.name);
      continue;
    }
    const rows = await db.execute<{ n: number }>(sql`SELECT count(*)::int AS n FROM ${sql.identifier(p.name)}`);
    // Detached, then dropped, in two transactions: dropping a partition still attached locks the
    // tables it references (webhook_bodies) while the detach holds the log, and a delivery
    // statement holding those in the other order (it reads the log and the bodies) deadlocked
    // with it. Once detached, no statement of the log reaches the table.
    if (!(await withLockTimeout(db, lockTimeoutMs, sql`ALTER TABLE webhook_deliveries DETACH PARTITION ${sql.identifier(p.name)}`))) {
      busy += 1;
      continue;
    }
    purged += Number(rows.rows[0]?.n ?? 0);
  }
  // Partitions detached here (now or by an earlier pass whose drop was cut short) are dropped.
  for (const name of await detachedLogPartitions(db)) await withLockTimeout(db, lockTimeoutMs, sql`DROP TABLE ${sql.identifier(name)}`);
  return { purged, busy, open };
}

/** Runs one DDL statement waiting at most `lockTimeoutMs` for its locks: false when it could not have them (busy; the next pass tries again). */
async function withLockTimeout(db: Executor, lockTimeoutMs: number, statement: ReturnType<typeof sql>): Promise<boolean> {
  try {
    await db.transaction(async (tx) => {
      await tx.execute(sql.raw(`SET LOCAL lock_timeout = ${Math.max(1, Math.floor(lockTimeoutMs))}`));
      await tx.execute(statement);
    });
    return true;
  } catch (err) {
    // lock_not_available (lock_timeout) or deadlock_detected: the log is busy
    const code = sqlStateOf(err);
    if (code === '55P03' || code === '40P01') return false;
    throw err;
  }
}

/** Weekly partitions of the log that are no longer attached to it (detached by the purge, not yet dropped). */
async function detachedLogPartitions(db: Executor): Promise<string[]> {
  const r = await db.execute<{ name: string }>(sql`
    SELECT c.relname AS name FROM pg_class c
     WHERE c.relkind = 'r' AND c.relname LIKE 'webhook_deliveries_w%' AND c.relnamespace = current_schema()::regnamespace
       AND NOT EXISTS (SELECT 1 FROM pg_inherits i WHERE i.inhrelid = c.oid)`);
  return r.rows.map((x) => x.name).filter((n) => PARTITION_NAME.test(n));
}

/** Deletes closed rows older than `before` from one partition, a batch at a time (at most 20 batches a pass). */
async function deleteClosedRows(db: Executor, table: ReturnType<typeof sql.identifier>, before: Date, batch: number): Promise<number> {
  let total = 0;
  for (let i = 0; i < 20; i += 1) {
    const r = await db.execute(sql`
      DELETE FROM ${table} WHERE ctid IN (
        SELECT ctid FROM ${table} WHERE created_at < ${before} AND status NOT IN ('pending', 'retrying') LIMIT ${batch})`);
    total += r.rowCount ?? 0;
    if ((r.rowCount ?? 0) < batch) break;
  }
  return total;
}

/** Folds the health deltas into the rollups (webhook_health_fold in migration 0006); answers the deltas folded. */
export async function foldEndpointHealth(db: Executor): Promise<number> {
  const r = await db.execute<{ n: number }>(sql`SELECT webhook_health_fold() AS n`);
  return Number(r.rows[0]?.n ?? 0);
}
