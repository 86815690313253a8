/**
 * Spec: Account states — while an account is read_only or suspended, every route under it
 * answers 403 read_only / 403 suspended, reads included, on both hosts, and nothing is written.
 * Switching back restores service at once.
 */
import request from 'supertest';
import { and, eq, identities, sql } from '@teamchat/db';
import { setAccountState, unitUsage, type AccountState } from '@teamchat/core';
import { bearer, newAccount, newKey, signInWeb, startHarness, UNLIMITED_PLANS, type Harness } from '../../../../test/support/harness';

let h: Harness;
beforeAll(async () => { h = await startHarness(); });
afterAll(async () => { await h.close(); });

async function setState(accountId: string, state: AccountState) {
  await h.deps.database.db.transaction((tx) => setAccountState(tx, accountId, state));
}

async function agentCount(accountId: string): Promise<number> {
  const [row] = await h.deps.database.db.select({ n: sql<number>`count(*)::int` }).from(identities)
    .where(and(eq(identities.accountId, accountId), eq(identities.kind, 'agent')));
  return row.n;
}

async function unitsUsed(accountId: string, userId: string): Promise<number> {
  return (await unitUsage({
    redis: h.deps.redis, keys: h.deps.config, accountId, seatUserId: userId, limits: UNLIMITED_PLANS.pro, now: h.deps.now(),
  })).used;
}

type Caller = {
  host: 'api' | 'web';
  read(path: string): Promise<request.Response>;
  write(path: string, body: object): Promise<request.Response>;
};

async function callers(accountId: string, email: string): Promise<Caller[]> {
  const key = await newKey(h, accountId, email, ['account:manage', 'identities:manage', 'members:manage']);
  const web = await signInWeb(h, email);
  return [
    {
      host: 'api',
      read: (p) => request(h.api).get(p).set(bearer(key)),
      write: (p, body) => request(h.api).post(p).set(bearer(key)).send(body),
    },
    {
      host: 'web',
      read: (p) => web.agent.get(p),
      write: (p, body) => web.agent.post(p).set('X-CSRF-Token', web.csrf).send(body),
    },
  ];
}

describe.each(['read_only', 'suspended'] as const)('account state %s', (state) => {
  test('answers 403 on reads and writes on both hosts, writes nothing, spends nothing; active again restores at once', async () => {
    const acct = await newAccount(h, 'pro');
    const base = `/accounts/${acct.accountId}`;
    const all = await callers(acct.accountId, acct.owner.email);

    // active: both hosts read and write
    for (const c of all) {
      expect((await c.read(base)).status).toBe(200);
      expect((await c.write(`${base}/identities`, { name: `before-${c.host}` })).status).toBe(201);
    }
    const agentsBefore = await agentCount(acct.accountId);
    expect(agentsBefore).toBe(2);

    await setState(acct.accountId, state);
    const unitsBefore = await unitsUsed(acct.accountId, acct.owner.userId);

    for (const c of all) {
      const responses = [
        await c.read(base),
        await c.read(`${base}/members`),
        await c.read(`${base}/no-such-route`),
        await c.write(`${base}/identities`, { name: `during-${c.host}` }),
      ];
      for (const res of responses) {
        expect({ host: c.host, status: res.status, code: res.body.error?.code }).toEqual({ host: c.host, status: 403, code: state });
        expect(typeof res.body.error.message).toBe('string');
        expect(res.headers['x-request-id']).toBeTruthy();
      }
    }
    expect(await agentCount(acct.accountId)).toBe(agentsBefore);
    expect(await unitsUsed(acct.accountId, acct.owner.userId)).toBe(unitsBefore);

    await setState(acct.accountId, 'active');
    for (const c of all) {
      const read = await c.read(base);
      expect(read.status).toBe(200);
      expect(read.body.state).toBe('active');
      expect((await c.write(`${base}/identities`, { name: `after-${c.host}` })).status).toBe(201);
    }
    expect(await agentCount(acct.accountId)).toBe(agentsBefore + 2);
  });
});

test('GET /accounts/{id} shows the state and plan it is in', async () => {
  const acct = await newAccount(h, 'scale');
  const [api] = await callers(acct.accountId, acct.owner.email);
  const res = await api.read(`/accounts/${acct.accountId}`);
  expect(res.body).toMatchObject({ id: acct.accountId, plan: 'scale', state: 'active', seats: 1 });
});
