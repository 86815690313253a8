import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { authenticateCredential, verifyPassword, findUserByEmail, seedDemoIfEmpty, DEMO_EMAIL } from '@teamchat/core';
import { createDatabase, runMigrations } from '@teamchat/db';
import { TEST_SERVER_URL } from './support/env';

const run = promisify(execFile);
const ROOT = path.resolve(__dirname, '..');

async function start(env: Record<string, string>) {
  try {
    const out = await run(process.execPath, ['--import', 'tsx', 'scripts/start.ts'], {
      cwd: ROOT, env: { ...process.env, SECRETS_KEY: 'ab'.repeat(32), ...env }, timeout: 30_000,
    });
    return { code: 0, ...out };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe('npm start in production: an unreachable service stops it with one clear line saying which and how to start it', () => {
  test('Redis', async () => {
    const out = await start({ NODE_ENV: 'production', REDIS_URL: 'redis://127.0.0.1:1' });
    expect(out.code).toBe(1);
    const lines = out.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^Redis is not reachable at 127\.0\.0\.1:1 \(production requires REDIS_URL\): .*docker compose -f docker\/compose\.yml up -d postgres redis/);
  }, 40_000);

  test('PostgreSQL: nothing is started in its place', async () => {
    const out = await start({ NODE_ENV: 'production', DATABASE_URL: 'postgres://postgres@127.0.0.1:1/teamchat' });
    expect(out.code).toBe(1);
    const lines = out.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^PostgreSQL is not reachable at 127\.0\.0\.1:1 \(production requires DATABASE_URL\): .*docker compose -f docker\/compose\.yml up -d postgres redis/);
    expect(out.stdout).not.toMatch(/started/);
  }, 40_000);
});

test('in development, Redis away and no redis-server on the PATH: one line says how to get it', async () => {
  const out = await start({ REDIS_URL: 'redis://127.0.0.1:1', PATH: '/nonexistent' });
  expect(out.code).toBe(1);
  const lines = out.stderr.trim().split('\n');
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatch(/^Redis does not answer at 127\.0\.0\.1:1 and redis-server is not on the PATH: install redis-server \(Debian\/Ubuntu: `apt-get install redis-server`/);
}, 40_000);

test('the demo account is created on an empty database only, and its printed credentials work', async () => {
  const name = `teamchat_seed_${randomBytes(4).toString('hex')}`;
  const admin = new Client({ connectionString: TEST_SERVER_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${name}"`);
  const url = new URL(TEST_SERVER_URL);
  url.pathname = `/${name}`;
  const database = createDatabase(url.toString(), { max: 2 });
  try {
    await runMigrations(url.toString());
    const [first, second] = await Promise.all([seedDemoIfEmpty(database.db), seedDemoIfEmpty(database.db)]);
    const demo = (first ?? second)!;
    expect([first, second].filter(Boolean)).toHaveLength(1); // concurrent starts seed once
    expect(await seedDemoIfEmpty(database.db)).toBeNull();
    const principal = await authenticateCredential(database.db, demo.apiKey, new Date());
    expect(principal).toMatchObject({ via: 'api_key', accountId: demo.accountId });
    expect(principal!.scopes).toEqual(expect.arrayContaining(['account:manage', 'webhooks:manage']));
    const owner = await findUserByEmail(database.db, DEMO_EMAIL);
    expect(await verifyPassword(demo.password, owner!.passwordHash)).toBe(true);
  } finally {
    await database.close();
    await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    await admin.end();
  }
}, 40_000);
