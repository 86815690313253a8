import Redis from 'ioredis';
import { Client } from 'pg';

/**
 * Counts this process's PostgreSQL queries (each `pg` `Client.query` is one round trip) and Redis
 * commands, from the moment it is installed (before anything opens a connection). The bench's
 * server and worker processes install it at load. BENCH_QUERY_LOG=1 also counts each query text.
 */
export const counters = { pg: 0, redis: 0 };
export const queryTexts = process.env.BENCH_QUERY_LOG === '1' ? new Map<string, number>() : null;

const pgQuery = Client.prototype.query;
Client.prototype.query = function countedQuery(this: Client, ...args: unknown[]) {
  counters.pg += 1;
  if (queryTexts) {
    const q = args[0] as string | { text?: string; name?: string };
    const text = (typeof q === 'string' ? q : (q?.text ?? q?.name ?? '?')).replace(/\s+/g, ' ').slice(0, 160);
    queryTexts.set(text, (queryTexts.get(text) ?? 0) + 1);
  }
  return (pgQuery as (...a: unknown[]) => unknown).apply(this, args);
} as typeof Client.prototype.query;

const redisSend = Redis.prototype.sendCommand;
Redis.prototype.sendCommand = function countedSend(this: Redis, ...args: Parameters<Redis['sendCommand']>) {
  // The connection watch's PING (watchRedisConnection, every 2 s) is not the work's.
  if ((args[0] as unknown as { name?: string })?.name === 'ping') return redisSend.apply(this, args);
  counters.redis += 1;
  if (queryTexts) {
    // Redis commands are counted with the queries, as "redis <name> <first key's last segment>"
    const c = args[0] as unknown as { name?: string; args?: unknown[] };
    const name = c?.name === 'evalsha' || c?.name === 'eval' ? `${c.name} ${String(c.args?.[0]).slice(0, 8)}` : c?.name;
    const key = `redis ${name}`;
    queryTexts.set(key, (queryTexts.get(key) ?? 0) + 1);
  }
  return redisSend.apply(this, args);
};
