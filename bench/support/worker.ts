/**
 * A real worker process for the webhook bench: this file counts the process's PostgreSQL queries
 * (each `pg` `Client.query` is one round trip) and Redis commands, answers `stats` over IPC with
 * those counts and its own `process.cpuUsage()`, and then runs the worker's real entrypoint
 * (apps/worker/src/main.ts: relay, fan-out, delivery, maintenance; config from the environment).
 * SIGTERM stops it as in production. Forked by bench/support/processes.ts (with `--cpu-prof`
 * under BENCH_CPU_PROF). BENCH_QUERY_LOG=1 also counts each query text.
 */

export interface WorkerStats {
  cpuUs: number;
  pgQueries: number;
  redisCommands: number;
  queries?: Record<string, number>;
}

import { counters, queryTexts } from './round-trip-counters';

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
