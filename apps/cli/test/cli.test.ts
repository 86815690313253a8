import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { accounts, credentials, eq, inArray, users } from '@teamchat/db';
import { createDatabase, type Database } from '@teamchat/db';
import { testDatabaseUrl } from '../../../test/support/env';

const run = promisify(execFile);
const ROOT = path.resolve(__dirname, '../../..');
const TSX = require.resolve('tsx/cli');

let database: Database;
beforeAll(() => { database = createDatabase(testDatabaseUrl(), { max: 2 }); });
afterAll(async () => { await database.close(); });

/** Runs the operator CLI as `npm run -s admin -- ...` would (same entrypoint, same runtime). */
async function admin(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [TSX, 'apps/cli/src/main.ts', ...args], {
      cwd: ROOT,
      env: { ...process.env, DATABASE_URL: testDatabaseUrl() },
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

const one = (stdout: string) => {
  const lines = stdout.trim().split('\n');
  expect(lines).toHaveLength(1);
  return JSON.parse(lines[0]);
};

const email = (tag: string) => `${tag}-${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}@cli.test`;

test('the whole operator flow with --json prints exactly one JSON object per command', async () => {
  const owner = email('owner');
  const created = one((await admin('account:create', '--plan', 'starter', '--owner-email', owner, '--owner-password', 'password-1', '--json')).stdout);
  expect(created).toEqual({ account_id: expect.stringMatching(/^acct_/), owner: { user_id: expect.stringMatching(/^usr_/), identity_id: expect.stringMatching(/^idn_/), email: owner } });
  const A = created.account_id;

  const member = email('member');
  const added = one((await admin('user:add', '--account', A, '--email', member, '--password', 'password-2', '--role', 'member', '--json')).stdout);
  expect(added).toEqual({ user_id: expect.any(String), identity_id: expect.any(String), email: member, role: 'member' });

  const promoted = one((await admin('user:set-role', '--account', A, '--email', member, '--role', 'admin', '--json')).stdout);
  expect(promoted).toMatchObject({ user_id: added.user_id, email: member, role: 'admin', previous_role: 'member' });

  const key = one((await admin('key:create', '--account', A, '--email', owner, '--scopes', 'account:manage,audit:read', '--read-only', '--expires-in', '30d', '--json')).stdout);
  expect(key).toEqual({ key_id: expect.stringMatching(/^key_/), key: expect.stringMatching(/^tc_key_/), scopes: ['channels:read', 'audit:read', 'account:manage'] });

  const agent = one((await admin('agent:create', '--account', A, '--name', 'bot', '--approved-by', owner, '--scopes', 'identities:manage', '--json')).stdout);
  expect(agent).toEqual({ identity_id: expect.stringMatching(/^idn_/), token: expect.stringMatching(/^tc_agt_/), scopes: expect.arrayContaining(['identities:manage']) });

  expect(one((await admin('account:set-state', '--account', A, '--state', 'read_only', '--json')).stdout)).toMatchObject({ ok: true });
  expect(one((await admin('account:set-plan', '--account', A, '--plan', 'scale', '--json')).stdout)).toMatchObject({ ok: true });
  const [row] = await database.db.select().from(accounts).where(eq(accounts.id, A));
  expect(row).toMatchObject({ state: 'read_only', plan: 'scale' });

  expect(one((await admin('key:revoke', '--account', A, '--key-id', key.key_id, '--json')).stdout)).toMatchObject({ ok: true });
  const [cred] = await database.db.select().from(credentials).where(eq(credentials.id, key.key_id));
  expect(cred.revokedAt).not.toBeNull();
  expect(cred.secretHash).not.toContain(key.key);
}, 60_000);

test('bad arguments: a clear message on stderr, exit code 2, nothing written', async () => {
  const tried = [email('gold'), email('missing'), email('unknown-scope')];
  const cases = [
    ['account:create', '--plan', 'gold', '--owner-email', tried[0], '--owner-password', 'password-1', '--json'],
    ['account:create', '--plan', 'pro', '--owner-email', 'not-an-email', '--owner-password', 'password-1', '--json'],
    ['account:create', '--plan', 'pro', '--owner-email', tried[1], '--json'],
    ['no:such-command', '--json'],
    ['key:create', '--account', 'acct_nope', '--email', tried[2], '--scopes', 'not:a-scope', '--json'],
  ];
  for (const args of cases) {
    const out = await admin(...args);
    expect(out.code).toBe(2);
    expect(out.stderr).toMatch(/error: /);
    expect(one(out.stdout)).toMatchObject({ ok: false, error: { code: expect.any(String) } });
  }
  // No person (and so no account owner) was created for any of the refused commands.
  const rows = await database.db.select().from(users).where(inArray(users.email, tried));
  expect(rows).toEqual([]);
}, 60_000);

test("a member's key can never carry webhooks:manage (exit 2)", async () => {
  const owner = email('owner');
  const A = one((await admin('account:create', '--plan', 'pro', '--owner-email', owner, '--owner-password', 'password-1', '--json')).stdout).account_id;
  const member = email('member');
  await admin('user:add', '--account', A, '--email', member, '--password', 'password-2', '--role', 'member', '--json');
  const out = await admin('key:create', '--account', A, '--email', member, '--scopes', 'webhooks:manage', '--json');
  expect(out.code).toBe(2);
  expect(one(out.stdout).error.code).toBe('forbidden');
}, 60_000);
