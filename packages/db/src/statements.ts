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
