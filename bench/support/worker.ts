/**
 * A real worker process for the webhook bench: this file counts the process's PostgreSQL queries
 * (each `pg` `Client.query` is one round trip) and Redis commands, answers `stats` over IPC with
 * those counts and its own `process.cpuUsage()`, and then runs the worker's real entrypoint
 * (apps/worker/src/main.ts: relay, fan-out, delivery, maintenance; config from the environment).
 * SIGTERM stops it as in production. Forked by bench/support/processes.ts (with `--cpu-prof`
 * under BENCH_CPU_PROF). BENCH_QUERY_LOG=1 also counts each query text.
 */
import Redis from 'ioredis';
import { Client } from 'pg';

export interface WorkerStats {
  cpuUs: number;
  pgQueries: number;
  redisCommands: number;
  queries?: Record<string, number>;
}

const counters = { pg: 0, redis: 0 };
const queryTexts = process.env.BENCH_QUERY_LOG === '1' ? new Map<string, number>() : null;
const pgQuery = Client.prototype.query;
Client.prototype.query = function countedQuery(this: Client, ...args: unknown[]) {
  counters.pg += 1;
  if (queryTexts) {
    const q = args[0] as string | { text?: string; name?: string };
    const text = (typeof q === 'string' ? q : (q?.text ?? q?.name ?? '?')).replace(/\s+/g, ' ').slice(0, 120);
    queryTexts.set(text, (queryTexts.get(text) ?? 0) + 1);
  }
  return (pgQuery as (...a: unknown[]) => unknown).apply(this, args);
} as typeof Client.prototype.query;
const redisSend = Redis.prototype.sendCommand;
Redis.prototype.sendCommand = function countedSend(this: Redis, ...args: Parameters<Redis['sendCommand']>) {
  counters.redis += 1;
  return redisSend.apply(this, args);
};

process.on('message', (msg: { id: number; cmd: 'stats' }) => {
  if (msg.cmd !== 'stats') return;
  const cpu = process.cpuUsage();
  const value: WorkerStats = {
    cpuUs: cpu.user + cpu.system,
    pgQueries: counters.pg,
    redisCommands: counters.redis,
    ...(queryTexts ? { queries: Object.fromEntries(queryTexts) } : {}),
  };
  process.send!({ id: msg.id, ok: true, value });
});

void import('../../apps/worker/src/main');
