import { sql } from 'drizzle-orm';
import { drizzle, NodePgDatabase } from 'drizzle-orm/node-postgres';
import { Client, Pool, PoolClient, PoolConfig, type ClientBase } from 'pg';
import * as schema from './schema';
import { DEFAULT_POOL_SIZE } from './pool';
import { runByKeyOn } from './statements';

export type Schema = typeof schema;
export type Db = NodePgDatabase<Schema>;
/** A transaction handle; use cases take `Executor` so they run inside or outside one. */
export type Tx = Parameters<Parameters<Db['transaction']>[0]>[0];
export type Executor = Db | Tx;

export interface Database {
  db: Db;
  pool: Pool;
  /** the pool of the statements defined `byKey` (DatabaseOptions.byKeyPool), or null: they run on `pool` */
  byKeyPool: Pool | null;
  close(): Promise<void>;
}

export interface DatabaseOptions extends Pick<PoolConfig, 'max' | 'application_name'> {
  /**
   * Keep idle connections open (default false: pg closes a connection idle for 10 s). The
   * service's processes keep theirs, so the first burst after a quiet spell does not pay a
   * connect, an authentication and a Parse per named statement (docs/operations.md "Readiness").
   */
  keepIdle?: boolean;
  /**
   * PostgreSQL-side bound, in ms, on one statement and on a transaction left idle: sent as the
   * connection's `statement_timeout` and `idle_in_transaction_session_timeout`, so no caller can
   * hold a connection longer than this whatever the JavaScript side does. Unset: no bound
   * (migrations and operator commands).
   */
  statementTimeoutMs?: number;
  /**
   * `transaction`: the URL is PgBouncer in transaction pooling mode (docs/operations.md
   * "PgBouncer"), where consecutive transactions of one pooled client may run on different server
   * connections, so nothing may live in the session: the bound above is set with SET LOCAL as
   * each transaction's first statement (PgBouncer refuses it as a start-up parameter), and
   * statements are unnamed (a named statement parsed on one server connection is unknown on the
   * next; PgBouncer 1.21+ with max_prepared_statements lifts this, not relied on). Default
   * `session`: the connection is the client's for its life (PostgreSQL directly, or PgBouncer in
   * session mode).
   */
  poolMode?: 'session' | 'transaction';
  /**
   * Plan every execution of a named statement with its parameters (`plan_cache_mode =
   * force_custom_plan`), never a cached generic plan. For a process whose statements look rows
   * up by arrays of ids in tables whose shape swings by orders of magnitude within seconds (the
   * delivery engine: a backlog's fan-out writes 100,000 open rows at once): a generic plan made
   * on the statistics before the swing hash-joins or bitmap-scans the whole backlog on every call
   * (measured: 0.6 s per batch instead of 2 ms). The Parse is still saved; the plan costs ~1 ms.
   * Behind PgBouncer in transaction mode statements are unnamed, so planned each time anyway.
   * Also no parallel workers (`max_parallel_workers_per_gather = 0`): a lookup of a few rows
   * whose estimate is off was planned as a parallel scan, starting workers that compete for
   * the cores with everything else, per batch.
   */
  customPlans?: boolean;
  /**
   * A second pool, of the same size, for the named statements defined `byKey` (statements.ts):
   * statements that reach every row by its key, whose right plan is the same at every table
   * size. Its sessions keep ONE cached generic plan per statement (`plan_cache_mode =
   * force_generic_plan`: no planning per execution, which was a third to a half of the delivery
   * engine's time in PostgreSQL, docs/performance.md "Planning in the worker") and may plan only
   * index lookups (`BY_KEY_SESSION`), so a plan made on the statistics of a
   * small table cannot become a scan of a large one later: that was why the worker plans every
   * execution (`customPlans`). Session mode only: behind PgBouncer in transaction mode statements
   * are unnamed and planned on each execution anyway, so they run on the main pool.
   */
  byKeyPool?: boolean;
  /**
   * The by-key pool's sessions commit asynchronously (`synchronous_commit = off`): a commit
   * returns once its WAL record is written, without waiting for the flush to disk (PostgreSQL
   * flushes it within 3 × `wal_writer_delay`, 600 ms at the default, or with the next
   * synchronous commit). Safe only where every by-key statement that writes may be lost in a PostgreSQL
   * crash and done again from what synchronous commits keep: the worker's (the fan-out's write,
   * claims, quick closes, claims given back: docs/webhooks.md "Crash safety").
   * `test/by-key-plans.test.ts` (packages/delivery) fails when a by-key statement that writes
   * is added, so that a durable write never runs here unnoticed. Consistency is never at stake:
   * a crash loses the last asynchronous commits in commit order, never one without those
   * before it, and never a synchronous commit's.
   */
  byKeyAsyncCommit?: boolean;
}

/**
 * The settings of a by-key session (DatabaseOptions.byKeyPool): one generic plan per statement,
 * made with sequential and bitmap scans priced out, so the planner reaches each table through an
 * index whatever the statistics say; that the index condition is each index's key is the
 * statements' part. Hash joins stay allowed: between a statement's own inputs (its arrays, its
 * CTEs) a nested loop costs their product, which a drain's batches of hundreds of rows felt
 * (docs/performance.md "Planning in the worker"). `test/by-key-plans.test.ts` (packages/delivery)
 * checks every by-key statement's generic plan on an empty database, the worst statistics there are.
 */
export const BY_KEY_SESSION = 'SET plan_cache_mode = force_generic_plan; SET enable_seqscan = off; SET enable_bitmapscan = off; SET max_parallel_workers_per_gather = 0';

/**
 * How much longer than its statement bound the client waits for a query's answer, or for a
 * connection (a new one, or a free one of the pool), before giving up on PostgreSQL. The bound
 * itself is PostgreSQL's (statement_timeout): a server that does not answer at all (a network
 * partition, a stalled host) cannot apply it, and a request would wait for TCP to give up, minutes
 * later (docs/operations.md "When PostgreSQL does not answer"). The margin lets PostgreSQL's own
 * timeout, with its clean error, come first whenever PostgreSQL answers.
 */
export const CLIENT_BOUND_MARGIN_MS = 2000;

/** The one place a pool is opened. */
export function createDatabase(url: string, options: DatabaseOptions = {}): Database {
  const bound = options.statementTimeoutMs;
  const pooled = options.poolMode === 'transaction';
  // With a bound, the client gives up on an unanswering server too (CLIENT_BOUND_MARGIN_MS).
  const clientBounds = bound === undefined ? {} : { query_timeout: bound + CLIENT_BOUND_MARGIN_MS, connectionTimeoutMillis: bound + CLIENT_BOUND_MARGIN_MS };
  const open = (session: string | null) => {
    const opened = new Pool({
      connectionString: url,
      max: options.max ?? DEFAULT_POOL_SIZE,
      application_name: options.application_name,
      ...(options.keepIdle ? { idleTimeoutMillis: 0 } : {}),
      ...clientBounds,
      ...(bound === undefined || pooled ? {} : { statement_timeout: bound, idle_in_transaction_session_timeout: bound }),
      // A session setting, run on each new connection before the pool hands it out (not as a
      // start-up parameter, which PgBouncer refuses). A connection it fails on is not used.
      ...(session ? { onConnect: async (client: ClientBase) => { await client.query(session); } } : {}),
    });
    // An idle client that errors (server restart) must not crash the process.
    opened.on('error', () => undefined);
    // Nor a checked-out one: a backend that dies between two queries of a transaction makes its
    // Client emit `error` with no listener (an uncaught exception). The query in progress or the
    // next one still fails, and the pool discards the dead client on release.
    opened.on('connect', (client) => {
      client.on('error', () => undefined);
      if (pooled) unnameStatements(client);
    });
    return opened;
  };
  const pool = open(options.customPlans && !pooled ? 'SET plan_cache_mode = force_custom_plan; SET max_parallel_workers_per_gather = 0' : null);
  const byKeyPool = options.byKeyPool && !pooled ? open(options.byKeyAsyncCommit ? `${BY_KEY_SESSION}; SET synchronous_commit = off` : BY_KEY_SESSION) : null;
  if (byKeyPool) runByKeyOn(pool, byKeyPool);
  const db = drizzle(pool, { schema });
  // drizzle-orm's transaction() on a pool checks a client out and runs BEGIN before its
  // try/finally, so a BEGIN that fails (its connection cut at that moment) never gives the
  // client back: after `max` of those the pool is exhausted and every later query waits forever
  // (found by the fault suite: PostgreSQL backends terminated under load). So a transaction
  // checks its client out here and always releases it; drizzle runs it on that one client
  // (one drizzle instance per pooled client, reused).
  const onClient = new WeakMap<PoolClient, Db>();
  db.transaction = (async (run, config) => {
    const client = await pool.connect();
    try {
      let single = onClient.get(client);
      if (!single) {
        single = drizzle(client, { schema }) as unknown as Db;
        onClient.set(client, single);
      }
      if (!pooled || bound === undefined) return await single.transaction(run, config);
      // Behind PgBouncer (transaction mode) the bound lasts exactly the transaction: one round trip more each.
      const setBound = sql.raw(`SET LOCAL statement_timeout = ${Math.floor(bound)}; SET LOCAL idle_in_transaction_session_timeout = ${Math.floor(bound)}`);
      return await single.transaction(async (tx) => {
        await tx.execute(setBound);
        return run(tx);
      }, config);
    } finally {
      // A client whose connection died is not queryable; the pool discards it on release.
      client.release();
    }
  }) as Db['transaction'];
  return { db, pool, byKeyPool, close: async () => { await Promise.all([pool.end(), byKeyPool?.end()]); } };
}

/** Sends every query of `client` unnamed (transaction pooling: see DatabaseOptions.poolMode). */
function unnameStatements(client: PoolClient): void {
  const query = client.query as (...args: unknown[]) => unknown;
  client.query = function unnamedQuery(this: PoolClient, ...args: unknown[]) {
    const first = args[0];
    if (first && typeof first === 'object' && 'name' in first && (first as { name?: string }).name) {
      const { name: _name, ...unnamed } = first as Record<string, unknown>;
      args[0] = unnamed;
    }
    return query.apply(this, args);
  } as PoolClient['query'];
}

/** A dedicated connection that LISTENs on one channel (see `listen`). */
export interface Listener {
  close(): Promise<void>;
}

/**
 * LISTENs on `channel` over a connection of its own (a pooled one would be handed to others) and
 * calls `onNotify` for each notification. A lost connection is opened again after `retryMs`;
 * meanwhile nothing is heard, so a listener is a wake-up, never the only way work is found.
 */
export function listen(url: string, channel: string, onNotify: () => void, options: { retryMs?: number; onError?: (err: Error) => void } = {}): Listener {
  const retryMs = options.retryMs ?? 1_000;
  let client: Client | null = null;
  let closed = false;
  let timer: NodeJS.Timeout | null = null;
  const again = (err?: Error) => {
    if (err) options.onError?.(err);
    const c = client;
    client = null;
    c?.end().catch(() => undefined);
    if (closed || timer) return;
    timer = setTimeout(() => {
      timer = null;
      open();
    }, retryMs);
    timer.unref();
  };
  const open = () => {
    if (closed) return;
    const c = new Client({ connectionString: url, application_name: 'teamchat-listen' });
    client = c;
    c.on('notification', () => onNotify());
    c.on('error', (err) => { if (client === c) again(err); });
    c.on('end', () => { if (client === c) again(); });
    c.connect()
      .then(() => c.query(`LISTEN ${channel}`))
      // Anything committed while not listening was not heard: look once.
      .then(() => onNotify())
      .catch((err: Error) => { if (client === c) again(err); });
  };
  open();
  return {
    async close() {
      closed = true;
      if (timer) clearTimeout(timer);
      const c = client;
      client = null;
      await c?.end().catch(() => undefined);
    },
  };
}

/**
 * Runs `run` on a pool of one connection of its own without the request bounds (no
 * statement_timeout, no client query_timeout), as migrations and operator commands run: for
 * set-up that writes tens of MB at once (the tests' search corpora, the bench's backlogs), which
 * outlasts a request's bound on a loaded host.
 */
export async function withUnboundedDatabase<T>(url: string, run: (db: Db) => Promise<T>): Promise<T> {
  const database = createDatabase(url, { max: 1, application_name: 'set-up' });
  try {
    return await run(database.db);
  } finally {
    await database.close();
  }
}
