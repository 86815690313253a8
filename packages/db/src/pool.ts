import type { Pool, PoolClient } from 'pg';

/** Connections a pool opens when its options do not say (createDatabase). */
export const DEFAULT_POOL_SIZE = 10;

/** The most connections the pool opens. */
export function poolSize(pool: Pool): number {
  return pool.options.max ?? DEFAULT_POOL_SIZE;
}

/**
 * Runs `fn` on `connections` connections of the pool at once (by default all of them): they are
 * all checked out together, so each call has a connection of its own, and all are released
 * whatever `fn` does. For work that every connection must have done (statements prepared at
 * warm-up; tests reading a session's state on each).
 */
export async function onEveryConnection<T>(pool: Pool, fn: (client: PoolClient) => Promise<T>, connections = poolSize(pool)): Promise<T[]> {
  const clients = await Promise.all(Array.from({ length: connections }, () => pool.connect()));
  try {
    return await Promise.all(clients.map(fn));
  } finally {
    for (const c of clients) c.release();
  }
}
