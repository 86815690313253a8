import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { authenticateCredential, openAccount } from '@teamchat/core';
import { accounts, createDatabase } from '@teamchat/db';
import { createMigratedDatabase, dropDatabase } from '../../../test/support/databases';

/**
 * `demo:reset` (README "Start it"): drops the local database and makes it again with a new demo
 * account, only when confirmed (`--yes` when not interactive), never in production, never for a
 * database on another machine.
 */
const ROOT = path.resolve(__dirname, '../../..');
const TSX = require.resolve('tsx/cli');
let name: string;
let url: string;

beforeAll(async () => {
  ({ name, url } = await createMigratedDatabase('teamchat_reset'));
});
afterAll(async () => {
  await dropDatabase(name);
});

async function admin(env: Record<string, string>, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [TSX, 'apps/cli/src/main.ts', ...args], { cwd: ROOT, env: { ...process.env, NODE_ENV: 'development', ...env } });
    return { code: 0, stdout, stderr };
  } catch (err) {
    return err as { code: number; stdout: string; stderr: string };
  }
}

async function accountIds(): Promise<string[]> {
  const database = createDatabase(url, { max: 1 });
  try {
    return (await database.db.select({ id: accounts.id }).from(accounts)).map((r) => r.id);
  } finally {
    await database.close();
  }
}

test('refused without confirmation, in production, and for a database elsewhere: nothing is dropped (exit 2)', async () => {
  const database = createDatabase(url, { max: 1 });
  const existing = await openAccount(database.db, { plan: 'pro', ownerEmail: `keep-${Date.now()}@reset.test`, ownerPassword: 'password-1' });
  await database.close();

  const unconfirmed = await admin({ DATABASE_URL: url }, 'demo:reset', '--json'); // stdin is not a terminal
  expect(unconfirmed.code).toBe(2);
  expect(JSON.parse(unconfirmed.stdout).error.message).toMatch(/confirm with --yes/);

  const production = await admin({ DATABASE_URL: url, NODE_ENV: 'production' }, 'demo:reset', '--yes', '--json');
  expect(production.code).toBe(2);
  expect(JSON.parse(production.stdout).error).toMatchObject({ code: 'forbidden', message: expect.stringMatching(/NODE_ENV=production/) });

  const remote = await admin({ DATABASE_URL: 'postgres://postgres@db.example.invalid:5432/teamchat' }, 'demo:reset', '--yes', '--json');
  expect(remote.code).toBe(2);
  expect(JSON.parse(remote.stdout).error.message).toMatch(/only resets a database on this machine/);

  expect(await accountIds()).toContain(existing.account_id);
}, 90_000);

test('--yes drops the database, migrates a new one and prints a new demo account whose key works', async () => {
  const before = await accountIds();
  expect(before.length).toBeGreaterThan(0);
  const out = await admin({ DATABASE_URL: url }, 'demo:reset', '--yes', '--json');
  expect(out.code).toBe(0);
  const printed = JSON.parse(out.stdout);
  expect(printed).toMatchObject({ ok: true, database: name, account_id: expect.stringMatching(/^acct_/), owner: { email: 'owner@demo.teamchat.test', password: expect.any(String) }, api_key: expect.stringMatching(/^tc_key_/) });
  expect(await accountIds()).toEqual([printed.account_id]);
  const database = createDatabase(url, { max: 1 });
  try {
    expect(await authenticateCredential(database.db, printed.api_key, new Date())).toMatchObject({ accountId: printed.account_id });
  } finally {
    await database.close();
  }
}, 90_000);
