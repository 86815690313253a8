import { fork, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import type { BenchContext } from '../run';
import { profArgs } from './processes';
import type { SeedResult, ServerReady, StatsSnapshot, ToServer } from './protocol';

/**
 * Starts bench/support/server.ts in its own process, so the load generator (autocannon, in the
 * bench process) never shares the server's event loop and the server's CPU time can be measured
 * alone. Its stdout (the JSON request log) goes to /dev/null.
 *
 * BENCH_CPU_PROF=<dir> runs it under `node --cpu-prof --cpu-prof-dir=<dir>`: the profile is
 * written when the server exits (see bench/profile-top.ts to read it).
 */
export interface BenchServer {
  ready: ServerReady;
  seed(): Promise<SeedResult>;
  setPage(page: unknown): Promise<void>;
  start(): Promise<void>;
  stop(): Promise<StatsSnapshot>;
  close(): Promise<void>;
}

export async function startServer(ctx: BenchContext): Promise<BenchServer> {
  const child: ChildProcess = fork(path.join(__dirname, 'server.ts'), [], {
    execArgv: [...profArgs(), '--import', 'tsx'],
    env: { ...process.env, BENCH_DATABASE_URL: ctx.databaseUrl, BENCH_REDIS_URL: ctx.redisUrl },
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  // A failed bench run must not leave its server behind.
  const killOnExit = () => child.kill('SIGKILL');
  process.on('exit', killOnExit);
  child.once('exit', () => process.off('exit', killOnExit));
  let next = 1;
  const waiting = new Map<number, { resolve: (v: any) => void; reject: (e: Error) => void }>();
  const exited = new Promise<void>((resolve) => child.once('exit', () => {
    for (const w of waiting.values()) w.reject(new Error('bench server exited'));
    resolve();
  }));
  waiting.set(0, { resolve: () => undefined, reject: () => undefined });
  const readyP = new Promise<ServerReady>((resolve, reject) => waiting.set(0, { resolve, reject }));
  child.on('message', (msg: { id: number; ok: boolean; value?: unknown; error?: string }) => {
    const w = waiting.get(msg.id);
    if (!w) return;
    waiting.delete(msg.id);
    if (msg.ok) w.resolve(msg.value);
    else w.reject(new Error(msg.error));
  });
  const call = <T>(msg: ToServer): Promise<T> => new Promise((resolve, reject) => {
    const id = next++;
    waiting.set(id, { resolve, reject });
    child.send({ ...msg, id });
  });
  const ready = await readyP;
  return {
    ready,
    seed: () => call<SeedResult>({ cmd: 'seed' }),
    setPage: (page) => call<void>({ cmd: 'setPage', page }),
    start: () => call<void>({ cmd: 'start' }),
    stop: () => call<StatsSnapshot>({ cmd: 'stop' }),
    async close() {
      await call<void>({ cmd: 'exit' }).catch(() => undefined);
      await exited;
    },
  };
}
