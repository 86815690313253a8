import type { Pool, PoolClient, QueryResultRow } from 'pg';
import type { Executor } from './client';
import { onEveryConnection } from './pool';

/**
 * Hot queries as named statements (docs/performance.md): the SQL text is written once, and PostgreSQL
 * parses and plans it once per connection (pg sends Parse only the first time a name is used on
 * a connection). No query builder runs per request, and the rows come back as pg gives them.
 *
 * Define one at module level with `statement(name, text)`; run it with `runStatement` on the
 * database or inside a transaction (the same Executor every use case takes).
 */
export interface Statement<R extends QueryResultRow> {
  readonly name: string;
  readonly text: string;
  /**
   * Reaches every row it reads or writes by its key (an index condition on the index's leading
   * column), so one generic plan is right at every table size: run on the by-key pool where the
   * process has one (DatabaseOptions.byKeyPool), outside a transaction.
   */
  readonly byKey: boolean;
  /** phantom: the row type */
  readonly _row?: R;
}

const defined = new Map<string, Statement<QueryResultRow>>();

export function statement<R extends QueryResultRow>(name: string, text: string, options: { byKey?: boolean } = {}): Statement<R> {
  const normalised = text.replace(/\s+/g, ' ').trim();
  const existing = defined.get(name);
  // pg refuses a name reused with other text on a connection; catch it at definition time.
  if (existing !== undefined && existing.text !== normalised) throw new Error(`statement ${name} is defined twice with different SQL`);
  const st = { name, text: normalised, byKey: options.byKey ?? false };
  defined.set(name, st);
  return st;
}

/** Each pool that has a by-key pool beside it (DatabaseOptions.byKeyPool), and that pool. */
const byKeyPools = new WeakMap<Pool, Pool>();

/** Statements defined `byKey` and run on `pool` go to `byKey` (createDatabase). */
export function runByKeyOn(pool: Pool, byKey: Pool): void {
  byKeyPools.set(pool, byKey);
}

/** The pg Pool (database) or PoolClient (transaction) behind a Drizzle handle. */
function clientOf(ex: Executor): Pool | PoolClient {
  const client = (ex as unknown as { session?: { client?: Pool | PoolClient } }).session?.client;
  if (!client || typeof client.query !== 'function') throw new Error('runStatement: not a Drizzle node-postgres handle');
  return client;
}

/**
 * True when `ex` is the database itself (each statement runs on a pool connection as its own
 * transaction), false inside a transaction: work may be batched with other callers' only then.
 */
export function outsideTransaction(ex: Executor): boolean {
  const client = clientOf(ex);
  // A pg Pool has `totalCount`; a PoolClient (a transaction's connection) does not.
  return typeof (client as Pool).totalCount === 'number';
}

/** Runs a named statement; inside a transaction it runs on the transaction's connection. */
export async function runStatement<R extends QueryResultRow>(ex: Executor, st: Statement<R>, values: unknown[]): Promise<R[]> {
  const client = clientOf(ex);
  // Inside a transaction the client is a PoolClient, never a key here: it stays on the transaction.
  const target = st.byKey ? byKeyPools.get(client as Pool) ?? client : client;
  const result = await target.query<R>({ name: st.name, text: st.text, values });
  return result.rows;
}

/** The named statements defined so far in this process (the modules loaded define theirs). */
export function definedStatements(): Array<Statement<QueryResultRow>> {
  return [...defined.values()];
}

/**
 * Prepares the named statements on every connection of a database's pools (docs/operations.md
 * "Readiness"): every statement on the main pool (a by-key statement inside a transaction runs
 * there), and the by-key statements on the by-key pool, if there is one, each with its one
 * generic plan made here. Answers the number of statements prepared per main-pool connection.
 */
export async function prepareStatementsOnEveryPool(database: { pool: Pool; byKeyPool: Pool | null }): Promise<number> {
  const prepared = await prepareStatements(database.pool);
  if (database.byKeyPool) await prepareStatements(database.byKeyPool, (st) => st.byKey);
  return prepared;
}

/** Bound on each warm-up execution (ms): a statement run with NULL parameters must never take long. */
const WARM_STATEMENT_TIMEOUT_MS = 250;

/**
 * Opens every connection of the pool at once and prepares every defined named
 * statement on each (docs/operations.md "Readiness"): pg parses a statement on a connection the
 * first time its name is used there, so a connection opened and a statement parsed under the
 * first load cost that load a connect, an authentication and a Parse per statement. Each
 * statement is executed with NULL parameters inside a transaction that is rolled back (a
 * savepoint around each, so one that fails on a NULL does not stop the next): nothing is
 * written, and the prepared statement outlives the rollback (prepared statements are not
 * transactional). Answers the number of statements prepared per connection.
 */
export async function prepareStatements(pool: Pool, which: (st: Statement<QueryResultRow>) => boolean = () => true): Promise<number> {
  const statements = definedStatements().filter(which);
  await onEveryConnection(pool, async (client) => {
    await client.query('BEGIN');
    try {
      await client.query(`SET LOCAL statement_timeout = ${WARM_STATEMENT_TIMEOUT_MS}`);
      for (const st of statements) {
        const params = Math.max(0, ...[...st.text.matchAll(/\$(\d+)/g)].map((m) => Number(m[1])));
        await client.query('SAVEPOINT warm');
        await client.query({ name: st.name, text: st.text, values: new Array(params).fill(null) }).catch(() => undefined);
        await client.query('ROLLBACK TO SAVEPOINT warm');
      }
    } finally {
      await client.query('ROLLBACK');
    }
  });
  return statements.length;
}
