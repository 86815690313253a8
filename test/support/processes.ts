import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { randomToken } from '@teamchat/core';
import { testDatabaseUrl, TEST_REDIS_URL } from './env';

export const ROOT = path.resolve(__dirname, '../..');

export interface Service {
  child: ChildProcess;
  /** stdout JSON log lines parsed so far (non-JSON lines are kept as { text }) */
  lines: Array<Record<string, unknown>>;
  stderr: () => string;
  /** resolves with the first log line matching, or rejects after `timeoutMs` */
  waitFor(match: (line: Record<string, unknown>) => boolean, timeoutMs?: number): Promise<Record<string, unknown>>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** The environment of a service process on the test database and Redis, on ephemeral ports. */
export function serviceEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    NODE_ENV: 'test',
    DATABASE_URL: testDatabaseUrl(),
    REDIS_URL: TEST_REDIS_URL,
    REDIS_PREFIX: `test-${randomToken(8)}`,
    SECRETS_KEY: 'ab'.repeat(32),
    API_PORT: '0',
    WEB_PORT: '0',
    OPS_PORT: '0',
    WORKER_OPS_PORT: '0',
    MCP_OPS_PORT: '0',
    LOG_LEVEL: 'info',
    ...extra,
  };
}

/**
 * Runs a real service process as `npm start` does: `node --import tsx entry args` (tsx's loader
 * in the service's own process, so a signal reaches the service itself), or `node entry` for
 * built JavaScript.
 */
export function startService(entry: string, env: NodeJS.ProcessEnv, args: string[] = [], opts: { tsx?: boolean } = {}): Service {
  const argv = opts.tsx === false ? [entry, ...args] : ['--import', 'tsx', entry, ...args];
  const child = spawn(process.execPath, argv, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: Array<Record<string, unknown>> = [];
  const waiters: Array<{ match: (l: Record<string, unknown>) => boolean; resolve: (l: Record<string, unknown>) => void }> = [];
  let buffered = '';
  let err = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    buffered += chunk.toString();
    let nl: number;
    while ((nl = buffered.indexOf('\n')) >= 0) {
      const text = buffered.slice(0, nl);
      buffered = buffered.slice(nl + 1);
      let line: Record<string, unknown>;
      try { line = JSON.parse(text); } catch { line = { text }; }
      lines.push(line);
      for (const w of [...waiters]) if (w.match(line)) { waiters.splice(waiters.indexOf(w), 1); w.resolve(line); }
    }
  });
  child.stderr!.on('data', (chunk: Buffer) => { err += chunk.toString(); });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }));
  });
  return {
    child, lines, exited,
    stderr: () => err,
    waitFor(match, timeoutMs = 20_000) {
      const found = lines.find(match);
      if (found) return Promise.resolve(found);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no matching log line within ${timeoutMs} ms; stderr: ${err}; stdout: ${JSON.stringify(lines)}`)), timeoutMs);
        waiters.push({ match, resolve: (l) => { clearTimeout(timer); resolve(l); } });
        void exited.then(({ code, signal }) => reject(new Error(`process exited (${signal ?? code}) before the line; stderr: ${err}`)));
      });
    },
  };
}

/** A TCP port that nothing listens on (bound once, then released). */
export async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}
