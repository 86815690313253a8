import { Client } from 'pg';

/**
 * Counts the PostgreSQL queries (round trips) sent by this process while `fn` runs: the hot path's
 * per-request figure, checked in tests so a change that adds one is seen. Every pg query goes
 * through Client.prototype.query (Drizzle, pool.query and named statements alike).
 */
export async function queriesDuring(fn: () => Promise<unknown>): Promise<string[]> {
  const sent: string[] = [];
  const original = Client.prototype.query;
  Client.prototype.query = function counted(this: Client, ...args: unknown[]) {
    const q = args[0] as string | { text?: string; name?: string };
    sent.push((typeof q === 'string' ? q : (q.name ?? q.text ?? '?')).replace(/\s+/g, ' ').slice(0, 80));
    return (original as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof Client.prototype.query;
  try {
    await fn();
  } finally {
    Client.prototype.query = original;
  }
  return sent;
}
