import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';

/**
 * A throwaway redis-server that a test starts, stops and starts again on one spare port
 * (docs/limits.md, 'When Redis is away'). No persistence: a restart comes back empty,
 * as a Redis that lost its data would. The binary must be on PATH.
 */
export interface TestRedisServer {
  port: number;
  url: string;
  start(): Promise<void>;
  /** kills the server (SIGKILL: no goodbye on the socket, as a crash or a lost host) */
  stop(): Promise<void>;
  /** freezes the server (SIGSTOP): connections stay open but nothing answers */
  freeze(): void;
  thaw(): void;
}

/**
 * A free port below the kernel's ephemeral range (32768+ here), so no outgoing connection of a
 * concurrent test can take it between this check, the first start and a restart.
 */
async function sparePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(20_000 + Math.floor(Math.random() * 10_000), '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

export async function testRedisServer(): Promise<TestRedisServer> {
  for (let tries = 1; ; tries++) {
    try {
      return await testRedisServerOn(await sparePort());
    } catch (err) {
      if (tries >= 5) throw err;
    }
  }
}

async function testRedisServerOn(port: number): Promise<TestRedisServer> {
  let child: ChildProcess | null = null;

  const start = async () => {
    if (child) return;
    const proc = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child = proc;
    await new Promise<void>((resolve, reject) => {
      let out = '';
      const onData = (chunk: Buffer) => {
        out += chunk.toString();
        if (out.includes('Ready to accept connections')) {
          proc.stdout!.off('data', onData);
          proc.stdout!.resume();
          resolve();
        }
      };
      proc.stdout!.on('data', onData);
      proc.stderr!.resume();
      proc.once('exit', (code) => reject(new Error(`redis-server on ${port} exited with ${code}: ${out}`)));
    });
  };

  const stop = async () => {
    const proc = child;
    if (!proc) return;
    child = null;
    if (proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = new Promise((r) => proc.once('exit', r));
    proc.kill('SIGCONT');
    proc.kill('SIGKILL');
    await exited;
  };

  try {
    await start();
  } catch (err) {
    child = null;
    throw err;
  }
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    start,
    stop,
    freeze: () => child?.kill('SIGSTOP'),
    thaw: () => child?.kill('SIGCONT'),
  };
}
