import type { Pool, PoolClient, QueryResultRow } from 'pg';
import type { Executor } from './client';

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
  /** phantom: the row type */
  readonly _row?: R;
}

const defined = new Map<string, string>();

export function statement<R extends QueryResultRow>(name: string, text: string): Statement<R> {
  const normalised = text.replace(/\s+/g, ' ').trim();
  const existing = defined.get(name);
  // pg refuses a name reused with other text on a connection; catch it at definition time.
  if (existing !== undefined && existing !== normalised) throw new Error(`statement ${name} is defined twice with different SQL`);
  defined.set(name, normalised);
  return { name, text: normalised };
}

/** The pg Pool (database) or PoolClient (transaction) behind a Drizzle handle. */
function clientOf(ex: Executor): Pool | PoolClient {
  const client = (ex as unknown as { session?: { client?: Pool | PoolClient } }).session?.client;
  if (!client || typeof client.query !== 'function') throw new Error('runStatement: not a Drizzle node-postgres handle');
  return client;
}

/** Runs a named statement; inside a transaction it runs on the transaction's connection. */
export async function runStatement<R extends QueryResultRow>(ex: Executor, st: Statement<R>, values: unknown[]): Promise<R[]> {
  const result = await clientOf(ex).query<R>({ name: st.name, text: st.text, values });
  return result.rows;
}

/** The named statements defined so far in this process (the modules loaded define theirs). */
export function definedStatements(): Array<{ name: string; text: string }> {
  return [...defined].map(([name, text]) => ({ name, text }));
}

/** Bound on each warm-up execution (ms): a statement run with NULL parameters must never take long. */
const WARM_STATEMENT_TIMEOUT_MS = 250;

/**
 * Opens `connections` connections of the pool at once and prepares every defined named
 * statement on each (docs/operations.md "Readiness"): pg parses a statement on a connection the
 * first time its name is used there, so a connection opened and a statement parsed under the
 * first load cost that load a connect, an authentication and a Parse per statement. Each
 * statement is executed with NULL parameters inside a transaction that is rolled back (a
 * savepoint around each, so one that fails on a NULL does not stop the next): nothing is
 * written, and the prepared statement outlives the rollback (prepared statements are not
 * transactional). Answers the number of statements prepared per connection.
 */
export async function prepareStatements(pool: Pool, connections: number): Promise<number> {
  const statements = definedStatements();
  const clients = await Promise.all(Array.from({ length: connections }, () => pool.connect()));
  try {
    await Promise.all(clients.map(async (client) => {
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
    }));
  } finally {
    for (const c of clients) c.release();
  }
  return statements.length;
}
