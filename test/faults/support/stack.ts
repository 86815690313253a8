import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { waitReady } from '@teamchat/core';
import { startHarness, type Harness } from '../../support/harness';
import { createMigratedDatabase, dropDatabase } from '../../support/databases';
import { ROOT } from '../../support/processes';
import { testRedisServer } from '../../support/redis-server';
import { removeTestRedisCluster, startTestRedisCluster, type TestRedisCluster } from '../../support/redis-cluster';
import { parseMetrics, valueOf } from '../../support/prometheus';
import { webhookConfig } from '../../support/webhooks';
import { startFaultReceiver, type FaultReceiver } from './receiver';

/**
 * One fault scenario's whole system, every part real: its own database (built by the real
 * migrations), its own redis-server on a spare port (stoppable), the API as a real process
 * (`apps/api/src/server.ts`), worker processes (`apps/worker/src/main.ts --ops-port 0`), an
 * HTTPS receiver on loopback, and an in-process harness on the same database for setup and
 * for reading the ledger. Processes run as `node --import tsx <entry>`, so the pid we signal and
 * sample is the service itself (the tsx CLI would run it in a grandchild).
 */

/** knobs shared by every scenario (documented in docs/operations.md "Proof: the fault suite") */
export const RETRY_SCHEDULE = process.env.FAULTS_RETRY_SCHEDULE ?? '1s,2s,3s,5s,8s';
export const TIMEOUT_MS = Number(process.env.FAULTS_TIMEOUT_MS ?? 3000);
/** how long a scenario waits for the system to settle after the fault (a slow shared machine needs more) */
export const SETTLE_MS = Number(process.env.FAULTS_SETTLE_MS ?? 180_000);

export interface Proc {
  name: string;
  child: ChildProcess;
  pid: number;
  /** the last lines of output (bounded: a soak writes many) */
  tail(): string;
  /** ports from the start-up line */
  ports: Record<string, number>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  alive(): boolean;
  kill(signal?: NodeJS.Signals): Promise<void>;
}

async function spawnService(name: string, entry: string, env: NodeJS.ProcessEnv, args: string[], readyMessage: string): Promise<Proc> {
  const child = spawn(process.execPath, ['--import', 'tsx', entry, ...args], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const tail: string[] = [];
  const keep = (s: string) => {
    tail.push(s);
    if (tail.length > 60) tail.shift();
  };
  let ready: ((line: Record<string, unknown>) => void) | null = null;
  const readyLine = new Promise<Record<string, unknown>>((resolve) => { ready = resolve; });
  let buffered = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    buffered += chunk.toString();
    let nl: number;
    while ((nl = buffered.indexOf('\n')) >= 0) {
      const text = buffered.slice(0, nl);
      buffered = buffered.slice(nl + 1);
      if (ready && text.includes(readyMessage)) {
        try {
          const line = JSON.parse(text) as Record<string, unknown>;
          if (line.message === readyMessage) {
            ready(line);
            ready = null;
          }
        } catch { /* not JSON */ }
      }
      // Request lines are the bulk; keep warnings and errors for a failure's message.
      if (!text.includes('"level":"info"')) keep(text);
    }
  });
  child.stderr!.on('data', (chunk: Buffer) => keep(chunk.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }));
  });
  let timer: NodeJS.Timeout | undefined;
  const line = await Promise.race([
    readyLine,
    exited.then((e) => { throw new Error(`${name} exited (${e.signal ?? e.code}) before "${readyMessage}": ${tail.join('\n')}`); }),
    new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new Error(`${name} not ready in 90 s: ${tail.join('\n')}`)), 90_000); }),
  ]).finally(() => clearTimeout(timer));
  const ports: Record<string, number> = {};
  for (const [k, v] of Object.entries(line)) if (k.endsWith('_port') && typeof v === 'number') ports[k] = v;
  const proc: Proc = {
    name, child, pid: child.pid!, ports, exited,
    tail: () => tail.join('\n'),
    alive: () => child.exitCode === null && child.signalCode === null,
    kill: async (signal = 'SIGKILL') => {
      if (!proc.alive()) return;
      child.kill(signal);
      await exited;
    },
  };
  return proc;
}

export interface StackOptions {
  /** LIMITS_ENABLED for the processes; default true (the real limits, in Redis) */
  limits?: boolean;
  retrySchedule?: string;
  timeoutMs?: number;
  /** `cluster`: a three-master Redis Cluster of the scenario's own (test/support/redis-cluster.ts); default one redis-server */
  redis?: 'single' | 'cluster';
  /**
   * The API's and workers' database settings, given the scenario's database URL (PgBouncer in
   * front of it, DATABASE_POOL_MODE, DATABASE_DIRECT_URL); default DATABASE_URL = that URL. The
   * in-process harness (setup, ledger) always uses the database directly.
   */
  processDatabase?: (dbUrl: string) => NodeJS.ProcessEnv | Promise<NodeJS.ProcessEnv>;
  /** environment for one process, by name (api1, worker1, ...), over the rest */
  processEnv?: (name: string) => NodeJS.ProcessEnv;
}

/** The scenario's Redis, one server or a cluster: stopped (every node killed, data lost) and started again. */
export interface StackRedis {
  start(): Promise<void>;
  stop(): Promise<void>;
}

export interface Stack {
  tag: string;
  dbUrl: string;
  redis: StackRedis;
  /** in-process deps on the same database and Redis: setup and ledger reads only, never traffic */
  h: Harness;
  rx: FaultReceiver;
  apis: Proc[];
  workers: Proc[];
  startApi(): Promise<Proc>;
  startWorker(): Promise<Proc>;
  /** base URL of an API process's API host */
  apiUrl(i?: number): string;
  /** a worker's /metrics, parsed */
  workerMetrics(i?: number): Promise<ReturnType<typeof parseMetrics>>;
  /** waiting + delayed + active jobs on the webhook queues, as a worker's /metrics reports them */
  queueDepth(i?: number): Promise<{ waiting: number; delayed: number; active: number; failed: number }>;
  close(): Promise<void>;
}

export async function startStack(tag: string, options: StackOptions = {}): Promise<Stack> {
  const { name: dbName, url: dbUrl } = await createMigratedDatabase(`teamchat_fault_${tag}`);

  const cluster: TestRedisCluster | null = options.redis === 'cluster' ? await startTestRedisCluster() : null;
  const server = cluster ? null : await testRedisServer();
  const redis: StackRedis = (cluster ?? server)!;
  const redisEnv = cluster ? { REDIS_CLUSTER_NODES: cluster.nodes } : { REDIS_URL: server!.url };
  const rx = await startFaultReceiver();
  const retrySchedule = options.retrySchedule ?? RETRY_SCHEDULE;
  const timeoutMs = options.timeoutMs ?? TIMEOUT_MS;
  const limits = options.limits ?? true;
  const h = await startHarness(webhookConfig({
    databaseUrl: dbUrl, limitsEnabled: limits, webhookTimeoutMs: timeoutMs,
    // Setup hashes passwords inside transactions; on a loaded machine that outlasted the 5 s
    // idle-in-transaction bound and cut the setup's connection. This harness serves no traffic.
    dbStatementTimeoutMs: 60_000,
    ...(cluster ? { redisClusterNodes: cluster.nodes.split(',').map((n) => ({ host: '127.0.0.1', port: Number(n.split(':')[1]) })) } : { redisUrl: server!.url }),
  }));
  await waitReady(h.deps.redis);
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    NODE_ENV: 'test',
    DATABASE_URL: dbUrl,
    ...(options.processDatabase ? await options.processDatabase(dbUrl) : {}),
    ...redisEnv,
    REDIS_PREFIX: h.deps.config.redisPrefix,
    SECRETS_KEY: h.deps.config.secretsKey,
    LOG_LEVEL: 'info',
    LIMITS_ENABLED: String(limits),
    API_PORT: '0',
    WEB_PORT: '0',
    OPS_PORT: '0',
    WORKER_OPS_PORT: '0',
    PUBLIC_API_URL: 'http://api.test',
    PUBLIC_WEB_URL: 'http://web.test',
    WEBHOOK_ALLOWED_HOSTS: 'localhost,127.0.0.1',
    WEBHOOK_CA_FILE: rx.caFile,
    WEBHOOK_RETRY_SCHEDULE: retrySchedule,
    WEBHOOK_TIMEOUT_MS: String(timeoutMs),
  };
  const apis: Proc[] = [];
  const workers: Proc[] = [];
  const metricsOf = async (i: number) => {
    const w = workers[i];
    const res = await fetch(`http://127.0.0.1:${w.ports.ops_port}/metrics`, { signal: AbortSignal.timeout(10_000) });
    return parseMetrics(await res.text());
  };
  const stack: Stack = {
    tag, dbUrl, redis, h, rx, apis, workers,
    async startApi() {
      const name = `api${apis.length + 1}`;
      const p = await spawnService(name, 'apps/api/src/server.ts', { ...env, ...options.processEnv?.(name) }, [], 'listening');
      apis.push(p);
      return p;
    },
    async startWorker() {
      const name = `worker${workers.length + 1}`;
      const p = await spawnService(name, 'apps/worker/src/main.ts', { ...env, ...options.processEnv?.(name) }, ['--ops-port', '0'], 'worker started');
      workers.push(p);
      return p;
    },
    apiUrl: (i = 0) => `http://127.0.0.1:${apis[i].ports.api_port}`,
    workerMetrics: (i = 0) => metricsOf(i),
    async queueDepth(i = 0) {
      const m = await metricsOf(i);
      const sum = (state: string) => ['webhook-fanout', 'webhook-delivery'].reduce((n, queue) => n + valueOf(m, 'teamchat_queue_jobs', { queue, state }), 0);
      return { waiting: sum('waiting'), delayed: sum('delayed'), active: sum('active'), failed: sum('failed') };
    },
    async close() {
      // The last warnings and errors of each process, for a failure's post-mortem.
      const dir = path.join(os.tmpdir(), 'teamchat-faults');
      fs.mkdirSync(dir, { recursive: true });
      for (const p of [...apis, ...workers]) fs.writeFileSync(path.join(dir, `${tag}-${p.name}.log`), p.tail());
      await Promise.all([...apis, ...workers].map((p) => p.kill('SIGKILL').catch(() => undefined)));
      await h.close().catch(() => undefined);
      await rx.close().catch(() => undefined);
      await (cluster ? removeTestRedisCluster(cluster) : redis.stop()).catch(() => undefined);
      await dropDatabase(dbName);
    },
  };
  return stack;
}

/** Resident memory of a process in bytes, from /proc (Linux). */
export function rssOf(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const m = /VmRSS:\s+(\d+) kB/.exec(status);
  return m ? Number(m[1]) * 1024 : NaN;
}

/** Local ports of the process's TCP connections to `remotePort` on loopback (from /proc: its socket fds, matched in /proc/net/tcp). */
export function connectionsOf(pid: number, remotePort: number): number[] {
  const inodes = new Set<string>();
  for (const fd of fs.readdirSync(`/proc/${pid}/fd`)) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(fs.readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m) inodes.add(m[1]);
    } catch { /* closed meanwhile */ }
  }
  const ports: number[] = [];
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    if (!fs.existsSync(file)) continue;
    for (const line of fs.readFileSync(file, 'utf8').split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length < 10) continue;
      const local = parseInt(f[1].split(':')[1], 16);
      const remote = parseInt(f[2].split(':')[1], 16);
      if (remote === remotePort && inodes.has(f[9])) ports.push(local);
    }
  }
  return ports;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

