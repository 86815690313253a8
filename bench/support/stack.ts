import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { profArgs } from './processes';

/**
 * The service started the way users start it, for the benches that measure what users get
 * (docs/performance.md "As users see it"):
 * - `npm-start`: `scripts/start.ts` exactly as `npm start` runs it (API + web host, MCP server and
 *   worker as its child processes, TypeScript through tsx, logging at `info` as JSON lines);
 * - `compiled`: the production image's commands on `npm run build`'s output (`node
 *   --conditions=teamchat-dist apps/*\/dist/...`, migrations by `packages/db/dist/migrate-cli.js`).
 * Both with NODE_ENV=development: the loopback receiver needs WEBHOOK_ALLOWED_HOSTS, which
 * production refuses (nodeEnv changes nothing else at run time), and limits off (one account
 * posts 200 messages/s, past a seat's minute limit). The processes' logs go to a file under the
 * OS's temporary directory (kept on failure), as a deployment writes them somewhere.
 *
 * `start()` answers once the API's `/readyz` answers 200 (a client that waits for readiness),
 * with the time that took.
 */
export type StackMode = 'npm-start' | 'compiled';

export interface Stack {
  apiUrl: string;
  webUrl: string;
  /** the worker's operations port (/readyz, /metrics) */
  workerOps: string;
  /** the API process's operations port */
  apiOps: string;
  /** ms from the spawn to the API's /readyz answering 200 */
  readyMs: number;
  /** ms from the spawn to the worker's /readyz answering 200 */
  workerReadyMs: number;
  logFile: string;
  stop(): Promise<void>;
}

const ROOT = path.resolve(__dirname, '..', '..');

/**
 * The lowest port the kernel hands out to outgoing connections: a port below it is never taken
 * by a client socket between this check and the stack's own listen seconds later. A port from
 * `listen(0)` is one of those, and a PostgreSQL, Redis or HTTP client of the bench took one once
 * before the web host could bind it (EADDRINUSE).
 */
function ephemeralLow(): number {
  try {
    return Number(fs.readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]) || 32768;
  } catch {
    return 32768;
  }
}

/** A port free now, between 20000 and the kernel's outgoing range, so only a listener can take it. */
async function freePort(): Promise<number> {
  const low = 20_000;
  const high = Math.max(low + 1_000, ephemeralLow());
  for (;;) {
    const port = low + Math.floor(Math.random() * (high - low));
    const free = await new Promise<boolean>((resolve) => {
      const s = net.createServer();
      s.once('error', () => resolve(false));
      s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
    });
    if (free) return port;
  }
}

async function waitReady(url: string, timeoutMs: number, alive: () => boolean): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const ok = await fetch(url, { signal: AbortSignal.timeout(2_000) }).then((r) => r.status === 200, () => false);
    if (ok) return;
    if (!alive()) throw new Error(`the stack exited before ${url} was ready`);
    if (Date.now() > deadline) throw new Error(`${url} not ready in ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * Runs a command to its end in a child process, awaited: the bench's own timers (the commit
 * probe) go on meanwhile, where a synchronous child blocked the event loop and the probe read
 * the wait as one commit stalled for all of it.
 */
function runToEnd(command: string, args: string[], options: SpawnOptions): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const child = spawn(command, args, options);
    child.on('error', reject);
    child.on('exit', (code, signal) => (code === 0 ? resolve() : reject(new Error(`${path.basename(command)} ${args.join(' ')} ended with ${signal ?? `exit code ${code}`}`))));
  });
}

/** `npm run build` (tsc -b): the compiled row's JavaScript. Answers the seconds it took. */
export async function buildDist(): Promise<number> {
  const t = Date.now();
  await runToEnd('npm', ['run', '-s', 'build'], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
  return (Date.now() - t) / 1000;
}

/**
 * BENCH_STACK_ENV: `NAME=value` pairs, separated by spaces, added to (or replacing) the stack's
 * environment. The stack is started with an environment of its own, not the bench's, so that
 * nothing of the shell it runs in leaks into the measured processes; this is the one way to
 * give them a setting for an experiment (e.g. `BENCH_STACK_ENV='NODE_OPTIONS=--perf-basic-prof'`).
 */
function stackEnvFromBench(): Record<string, string> {
  const pairs = (process.env.BENCH_STACK_ENV ?? '').split(/\s+/).filter(Boolean);
  return Object.fromEntries(pairs.map((pair) => {
    const m = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(pair);
    if (!m) throw new Error(`BENCH_STACK_ENV: "${pair}" is not NAME=value`);
    return [m[1], m[2]];
  }));
}

export async function startStack(mode: StackMode, opts: { databaseUrl: string; redisUrl: string; caFile: string }): Promise<Stack> {
  const ports = new Set<number>();
  while (ports.size < 6) ports.add(await freePort());
  const [api, web, ops, workerOps, mcp, mcpOps] = [...ports];
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '',
    NODE_ENV: 'development',
    DATABASE_URL: opts.databaseUrl,
    REDIS_URL: opts.redisUrl,
    REDIS_PREFIX: `stack-${randomBytes(4).toString('hex')}`,
    SECRETS_KEY: randomBytes(32).toString('hex'),
    API_PORT: String(api), WEB_PORT: String(web), OPS_PORT: String(ops), WORKER_OPS_PORT: String(workerOps), MCP_PORT: String(mcp), MCP_OPS_PORT: String(mcpOps),
    LOG_LEVEL: 'info',
    LIMITS_ENABLED: 'false',
    WEBHOOK_ALLOWED_HOSTS: 'localhost',
    WEBHOOK_CA_FILE: opts.caFile,
    ...stackEnvFromBench(),
  };
  const logFile = path.join(os.tmpdir(), `teamchat-bench-${mode}-${randomBytes(3).toString('hex')}.log`);
  const log = fs.openSync(logFile, 'a');
  const children: ChildProcess[] = [];
  const spawnNode = (args: string[]) => {
    const c = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['ignore', log, log], detached: mode === 'npm-start' });
    children.push(c);
    return c;
  };
  const t0 = Date.now();
  if (mode === 'npm-start') {
    spawnNode(['--import', 'tsx', 'scripts/start.ts']);
  } else {
    // BENCH_CPU_PROF=<dir> profiles the compiled row's API and worker.
    const prof = profArgs();
    const dist = ['--conditions=teamchat-dist'];
    await runToEnd(process.execPath, [...dist, 'packages/db/dist/migrate-cli.js'], { cwd: ROOT, env, stdio: ['ignore', log, log] });
    spawnNode([...prof, ...dist, 'apps/api/dist/server.js']);
    spawnNode([...dist, 'apps/mcp/dist/server.js']);
    spawnNode([...prof, ...dist, 'apps/worker/dist/main.js']);
  }
  const alive = () => children.every((c) => c.exitCode === null && c.signalCode === null);
  const killAll = () => { for (const c of children) if (c.exitCode === null) c.kill('SIGKILL'); };
  process.on('exit', killAll);
  const stop = async () => {
    const exited = children.map((c) => (c.exitCode !== null || c.signalCode !== null ? Promise.resolve() : new Promise<void>((r) => c.once('exit', () => r()))));
    for (const c of children) c.kill('SIGTERM');
    const timer = setTimeout(killAll, 40_000);
    await Promise.all(exited);
    clearTimeout(timer);
    process.off('exit', killAll);
    fs.closeSync(log);
  };
  try {
    let workerReadyMs = 0;
    const workerReady = waitReady(`http://127.0.0.1:${workerOps}/readyz`, 300_000, alive).then(() => { workerReadyMs = Date.now() - t0; });
    await waitReady(`http://127.0.0.1:${api}/readyz`, 300_000, alive);
    const readyMs = Date.now() - t0;
    await workerReady;
    return { apiUrl: `http://127.0.0.1:${api}`, webUrl: `http://127.0.0.1:${web}`, workerOps: `http://127.0.0.1:${workerOps}`, apiOps: `http://127.0.0.1:${ops}`, readyMs, workerReadyMs, logFile, stop };
  } catch (err) {
    await stop().catch(() => undefined);
    throw new Error(`${(err as Error).message}; the processes' log: ${logFile}`, { cause: err });
  }
}
