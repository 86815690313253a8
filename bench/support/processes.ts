import { fork, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import type { WorkerStats } from './worker';

/**
 * Child processes of the webhook bench, each with a small request/answer protocol over IPC:
 * the HTTPS receiver (bench/support/receiver.ts) and real worker processes
 * (bench/support/worker.ts → apps/worker/src/main.ts).
 */
export interface Rpc {
  child: ChildProcess;
  call<T>(cmd: string): Promise<T>;
  exited: Promise<number | null>;
}

/** Children still running when the bench exits (a failed run too) are killed with it. */
const live = new Set<ChildProcess>();
process.on('exit', () => { for (const c of live) c.kill('SIGKILL'); });

function rpc(child: ChildProcess): Rpc & { first: Promise<unknown> } {
  let next = 1;
  const waiting = new Map<number, { resolve: (v: any) => void; reject: (e: Error) => void }>();
  let resolveFirst: (v: unknown) => void = () => undefined;
  const first = new Promise((resolve) => { resolveFirst = resolve; });
  live.add(child);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => {
    live.delete(child);
    for (const w of waiting.values()) w.reject(new Error(`child ${child.pid} exited (${code})`));
    waiting.clear();
    resolve(code);
  }));
  child.on('message', (msg: { id: number; ok: boolean; value?: unknown; error?: string }) => {
    if (msg.id === 0) { resolveFirst(msg.value); return; }
    const w = waiting.get(msg.id);
    if (!w) return;
    waiting.delete(msg.id);
    if (msg.ok) w.resolve(msg.value);
    else w.reject(new Error(msg.error));
  });
  return {
    child,
    first,
    exited,
    call: <T>(cmd: string) => new Promise<T>((resolve, reject) => {
      const id = next++;
      waiting.set(id, { resolve, reject });
      child.send({ cmd, id });
    }),
  };
}

/** BENCH_CPU_PROF=<dir>: node's arguments that profile a process of the bench (`node --cpu-prof`). */
export const profArgs = () => (process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : []);

export interface ReceiverProcess extends Rpc {
  port: number;
  caFile: string;
  close(): Promise<void>;
}

export async function startReceiverProcess(): Promise<ReceiverProcess> {
  const child = fork(path.join(__dirname, 'receiver.ts'), [], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  const r = rpc(child);
  const { port, caFile } = (await r.first) as { port: number; caFile: string };
  return {
    ...r,
    port,
    caFile,
    async close() {
      await r.call('exit').catch(() => undefined);
      await r.exited;
    },
  };
}

export interface WorkerProcess extends Rpc {
  /** the worker's operations port (/metrics, /readyz), from its start line */
  opsPort: number;
  /** CPU µs, PostgreSQL queries and Redis commands of the worker process since it started */
  stats(): Promise<WorkerStats>;
  /** SIGTERM (finishes in-flight attempts) and the exit code */
  stop(): Promise<number | null>;
}

/** A real worker process, ready once it logs "worker started". BENCH_CPU_PROF=<dir> profiles it. */
export async function startWorkerProcess(env: Record<string, string>): Promise<WorkerProcess> {
  const child = fork(path.join(__dirname, 'worker.ts'), [], {
    execArgv: [...profArgs(), ...(process.env.BENCH_WORKER_NODE_ARGS ?? '').split(' ').filter(Boolean), '--import', 'tsx'],
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', WORKER_OPS_PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  const r = rpc(child);
  let out = '';
  let started = false;
  let opsPort = 0;
  const onData = (d: Buffer) => {
    // Keep only a tail for error messages; the JSON log lines are otherwise dropped.
    if (!started) out = (out + d.toString()).slice(-20_000);
    // BENCH_WORKER_LOG=1: the workers' warn and error lines on stderr.
    if (process.env.BENCH_WORKER_LOG === '1') for (const l of d.toString().split('\n')) if (/"level":"(warn|error)"/.test(l)) process.stderr.write(`[worker ${child.pid}] ${l}\n`);
    // Started once its whole "worker started" log line is in (it names the operations port).
    if (!started) {
      // Whole lines only: not the one still coming, nor a first one the tail cut.
      const line = out.split('\n').slice(out.length >= 20_000 ? 1 : 0, -1).find((l) => l.includes('"worker started"'));
      if (line) {
        opsPort = Number((JSON.parse(line) as { ops_port?: number }).ops_port);
        started = true;
      }
    }
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', (d: Buffer) => {
    const text = d.toString();
    if (!/WEBHOOK_ALLOWED_HOSTS exempts/.test(text)) process.stderr.write(`[worker ${child.pid}] ${text}`);
  });
  const deadline = Date.now() + 60_000;
  while (!started) {
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill('SIGKILL'); // a late starter must not work beside the bench's next try
      throw new Error(`worker did not start (${child.exitCode}): ${out}`);
    }
    await new Promise((res) => setTimeout(res, 50));
  }
  return {
    ...r,
    get opsPort() { return opsPort; },
    stats: () => r.call<WorkerStats>('stats'),
    stop: async () => {
      child.kill('SIGTERM');
      return r.exited;
    },
  };
}
