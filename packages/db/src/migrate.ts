import path from 'node:path';
import { Client } from 'pg';
import { migrate } from 'drizzle-orm/node-postgres/migrator';
import { drizzle } from 'drizzle-orm/node-postgres';
import { runOnlineSteps } from './online';

export const MIGRATIONS_DIR = path.resolve(__dirname, '..', 'migrations');

/** Creates the database named in url if it does not exist (connecting to the `postgres` db). */
export async function ensureDatabase(url: string): Promise<boolean> {
  const target = new URL(url);
  const name = decodeURIComponent(target.pathname.replace(/^\//, ''));
  const admin = new URL(url);
  admin.pathname = '/postgres';
  const client = new Client({ connectionString: admin.toString() });
  await client.connect();
  try {
    const found = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (found.rowCount) return false;
    await client.query(`CREATE DATABASE "${name.replace(/"/g, '""')}"`);
    return true;
  } catch (err) {
    // Two processes creating it at once: the loser sees duplicate_database (42P04).
    if ((err as { code?: string }).code === '42P04') return false;
    throw err;
  } finally {
    await client.end();
  }
}

/**
 * Applies the drizzle-kit migrations in order (one transaction), then the online steps not yet
 * done (src/online.ts: backfills and CONCURRENTLY built indexes, outside any transaction); safe to
 * run from several processes (advisory lock). `onStep` hears each online step that ran (ms).
 */
export async function runMigrations(url: string, onStep?: (id: string, ms: number) => void): Promise<void> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    await client.query('SELECT pg_advisory_lock(724311)');
    await migrate(drizzle(client), { migrationsFolder: MIGRATIONS_DIR });
    await runOnlineSteps(client, undefined, onStep);
  } finally {
    await client.query('SELECT pg_advisory_unlock(724311)').catch(() => undefined);
    await client.end();
  }
}
