import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { postgresAnswers, redisAnswers } from '../scripts/dev-services';

/**
 * README "Start it": on a machine where nothing answers at the configured PostgreSQL and Redis,
 * `npm start` starts an embedded PostgreSQL (with pg_trgm) and a local redis-server, says so,
 * serves the API on them, and stops them when it stops. Free ports only; its own data directory.
 */
const ROOT = path.resolve(__dirname, '..');

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

test('nothing answering: npm start comes up on an embedded PostgreSQL and a local Redis, and stops them with itself', async () => {
  const [pgPort, redisPort, apiPort, webPort, mcpPort] = await Promise.all([freePort(), freePort(), freePort(), freePort(), freePort()]);
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'teamchat-dev-data-'));
  fs.chmodSync(dataDir, 0o755); // the embedded server may run as the postgres OS user (when tests run as root)
  const databaseUrl = `postgres://postgres@127.0.0.1:${pgPort}/teamchat`;
  const redisUrl = `redis://127.0.0.1:${redisPort}`;
  expect(await postgresAnswers(databaseUrl, 1000)).toBe(false);
  expect(await redisAnswers(redisUrl, 1000)).toBe(false);

  const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/start.ts'], {
    cwd: ROOT,
    env: {
      ...process.env, NODE_ENV: 'development', SECRETS_KEY: 'ab'.repeat(32), DATABASE_URL: databaseUrl, REDIS_URL: redisUrl, DEV_DATA_DIR: dataDir,
      API_PORT: String(apiPort), WEB_PORT: String(webPort), MCP_PORT: String(mcpPort), OPS_PORT: '0', WORKER_OPS_PORT: '0', MCP_OPS_PORT: '0',
      REDIS_PREFIX: `embedded${process.pid}`, LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  try {
    const deadline = Date.now() + 100_000;
    while (!stdout.includes('worker running')) {
      if (child.exitCode !== null) throw new Error(`npm start exited: ${stderr}`);
      if (Date.now() > deadline) throw new Error(`npm start did not come up: ${stdout} ${stderr}`);
      await new Promise((r) => setTimeout(r, 250));
    }
    expect(stdout).toContain(`started PostgreSQL (embedded) on 127.0.0.1:${pgPort}, data in ${path.join(dataDir, 'pg')}`);
    expect(stdout).toContain(`started Redis (redis-server) on 127.0.0.1:${redisPort}, data in ${path.join(dataDir, 'redis')}`);

    // The API serves from the embedded database: the printed demo key reads its account.
    const key = /API key:\s+(\S+)/.exec(stdout)![1];
    const account = /account:\s+(acct_\S+)/.exec(stdout)![1];
    let res: Response | null = null;
    for (let i = 0; i < 120 && !res?.ok; i++) {
      res = await fetch(`http://127.0.0.1:${apiPort}/accounts/${account}`, { headers: { authorization: `Bearer ${key}` } }).catch(() => null);
      if (!res?.ok) await new Promise((r) => setTimeout(r, 500));
    }
    expect(res?.status).toBe(200);
    expect(await res!.json()).toMatchObject({ id: account });
    const ready = await fetch(`http://127.0.0.1:${apiPort}/readyz`);
    expect(await ready.json()).toMatchObject({ checks: { postgres: 'ok', redis: 'ok' } });

    // Search will use pg_trgm: the embedded build carries it.
    const { Client } = await import('pg');
    const db = new Client({ connectionString: databaseUrl });
    await db.connect();
    try {
      await db.query('CREATE EXTENSION IF NOT EXISTS pg_trgm');
      expect((await db.query("SELECT similarity('teamchat', 'teamchats') > 0.5 AS close")).rows[0].close).toBe(true);
    } finally {
      await db.end();
    }
  } finally {
    child.kill('SIGTERM');
    await exited;
  }
  // What it started stopped with it.
  expect(await postgresAnswers(databaseUrl, 1000)).toBe(false);
  expect(await redisAnswers(redisUrl, 1000)).toBe(false);
  fs.rmSync(dataDir, { recursive: true, force: true });
}, 180_000);
