import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * A throwaway three-master Redis Cluster (docs/operations.md "Redis Cluster"): three Debian
 * `redis-server` processes on loopback ports with cluster-enabled yes, no persistence, in a temp
 * dir, joined by `redis-cli --cluster create ... --cluster-replicas 0 --cluster-yes`. Stopping
 * kills every node (SIGKILL); starting again brings them back from their nodes.conf (the slot map
 * survives, the data does not), as a cluster that lost its data would. `redis-server` and
 * `redis-cli` must be on PATH.
 */
export interface TestRedisCluster {
  /** REDIS_CLUSTER_NODES: `127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3` */
  nodes: string;
  ports: number[];
  /** the nodes' directory (nodes.conf files) */
  dir: string;
  start(): Promise<void>;
  stop(): Promise<void>;
}

/** A free port below the kernel's ephemeral range (as test/support/redis-server.ts), with its cluster bus port free too. */
async function sparePort(): Promise<number> {
  const free = (port: number) => new Promise<boolean>((resolve) => {
    const srv = net.createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 5_000);
    // The bus port is chosen explicitly (cluster-port) next to it, so both stay below 32768.
    if ((await free(port)) && (await free(port + 5_000))) return port;
  }
}

async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`redis cluster: ${what} not reached in ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const cli = (port: number, ...args: string[]) => run('redis-cli', ['-h', '127.0.0.1', '-p', String(port), ...args], { timeout: 10_000 });

export async function startTestRedisCluster(): Promise<TestRedisCluster> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'teamchat-redis-cluster-'));
  const ports: number[] = [];
  while (ports.length < 3) {
    const p = await sparePort();
    if (!ports.includes(p)) ports.push(p);
  }
  const children = new Map<number, ChildProcess>();

  const startNode = async (port: number) => {
    const proc = spawn('redis-server', [
      '--port', String(port), '--bind', '127.0.0.1', '--cluster-enabled', 'yes', '--cluster-port', String(port + 5_000),
      '--cluster-config-file', path.join(dir, `nodes-${port}.conf`), '--cluster-node-timeout', '2000',
      '--save', '', '--appendonly', 'no', '--dir', dir,
    ], { stdio: ['ignore', 'ignore', 'ignore'] });
    children.set(port, proc);
    await waitFor(`node ${port} answering`, async () => (await cli(port, 'ping')).stdout.trim() === 'PONG', 10_000);
  };
  const clusterOk = async () => {
    for (const p of ports) {
      const { stdout } = await cli(p, 'cluster', 'info');
      if (!stdout.includes('cluster_state:ok')) return false;
    }
    return true;
  };

  const start = async () => {
    await Promise.all(ports.map((p) => (children.has(p) ? undefined : startNode(p))));
    if (!fs.existsSync(path.join(dir, 'created'))) {
      await run('redis-cli', ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '0', '--cluster-yes'], { timeout: 30_000 });
      fs.writeFileSync(path.join(dir, 'created'), '');
    }
    await waitFor('cluster_state:ok on every node', clusterOk, 30_000);
  };

  const stop = async () => {
    await Promise.all([...children.entries()].map(async ([port, proc]) => {
      children.delete(port);
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      const exited = new Promise((r) => proc.once('exit', r));
      proc.kill('SIGKILL');
      await exited;
    }));
  };

  try {
    await start();
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    nodes: ports.map((p) => `127.0.0.1:${p}`).join(','),
    ports,
    dir,
    start,
    async stop() {
      await stop();
    },
  };
}

/** Stops the cluster and removes its directory (a test's afterAll). */
export async function removeTestRedisCluster(c: TestRedisCluster | undefined): Promise<void> {
  if (!c) return;
  await c.stop();
  fs.rmSync(c.dir, { recursive: true, force: true });
}
