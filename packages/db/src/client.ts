import { drizzle, NodePgDatabase } from 'drizzle-orm/node-postgres';
import { Pool, PoolConfig } from 'pg';
import * as schema from './schema';

export type Schema = typeof schema;
export type Db = NodePgDatabase<Schema>;
/** A transaction handle; use cases take `Executor` so they run inside or outside one. */
export type Tx = Parameters<Parameters<Db['transaction']>[0]>[0];
export type Executor = Db | Tx;

export interface Database {
  db: Db;
  pool: Pool;
  close(): Promise<void>;
}

/** The one place a pool is opened. */
export function createDatabase(url: string, options: Pick<PoolConfig, 'max' | 'application_name'> = {}): Database {
  const pool = new Pool({ connectionString: url, max: options.max ?? 10, application_name: options.application_name });
  // An idle client that errors (server restart) must not crash the process.
  pool.on('error', () => undefined);
  const db = drizzle(pool, { schema });
  return { db, pool, close: () => pool.end() };
}
