import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import type { Config } from '@teamchat/core';

/** A real worker process (`tsx apps/worker/src/main.ts`) configured like a test harness. */
const ROOT = path.resolve(__dirname, '../..');

export interface WorkerProcess {
  child: ChildProcess;
  output(): string;
  /** SIGKILL: no clean-up at all */
  kill(): Promise<void>;
  /** SIGTERM, and the exit code */
  stop(): Promise<number | null>;
}

export function workerEnv(config: Readonly<Config>, extra: Record<string, string> = {}): Record<string, string> {
  const seconds = (ms: number) => `${Math.max(1, Math.round(ms / 1000))}s`;
  return {
    NODE_ENV: 'test',
    DATABASE_URL: config.databaseUrl,
    REDIS_URL: config.redisUrl,
    REDIS_PREFIX: config.redisPrefix,
    REDIS_COMMAND_TIMEOUT_MS: String(config.redisCommandTimeoutMs),
    SECRETS_KEY: config.secretsKey,
    LOG_LEVEL: 'info',
    WEBHOOK_ALLOWED_HOSTS: config.webhookAllowedHosts.join(','),
    WEBHOOK_CA_FILE: config.webhookCaFile ?? '',
    WEBHOOK_RETRY_SCHEDULE: config.webhookRetryScheduleMs.map(seconds).join(','),
    WEBHOOK_TIMEOUT_MS: String(config.webhookTimeoutMs),
    LIMITS_ENABLED: String(config.limitsEnabled),
    ...extra,
  };
}

export async function startWorkerProcess(env: Record<string, string>): Promise<WorkerProcess> {
  // `node --import tsx` (not the tsx CLI, which runs the script in a grandchild): the pid signalled is the worker's.
  const child = spawn(process.execPath, ['--import', 'tsx', 'apps/worker/src/main.ts'], {
    cwd: ROOT,
    // Each worker picks a free operations port, so several can run on one machine.
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', WORKER_OPS_PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => { out += d.toString(); });
  child.stderr!.on('data', (d: Buffer) => { out += d.toString(); });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  // Ready once the entrypoint logs that its loops started.
  const deadline = Date.now() + 30_000;
  while (!out.includes('worker started')) {
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill('SIGKILL'); // a late starter must not go on working beside the next tests
      throw new Error(`worker did not start (${child.exitCode}): ${out}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    child,
    output: () => out,
    kill: async () => {
      child.kill('SIGKILL');
      await exited;
    },
    stop: async () => {
      child.kill('SIGTERM');
      return exited;
    },
  };
}
