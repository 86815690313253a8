/**
 * Spec: Limits — call units per day per seat (rule 3), the cost of a read (1 per 16 KB returned,
 * minimum 1), Errors `budget_exceeded`. Time is the harness's injectable clock, never a sleep.
 */
import request from 'supertest';
import { eq, identities } from '@teamchat/db';
import { READ_UNIT_BYTES, createAgent, randomToken, readCost, unitUsage } from '@teamchat/core';
import {
  addPerson, bearer, newAccount, newKey, signInWeb, startHarness, UNLIMITED_PLANS, type Harness,
} from '../../../../test/support/harness';

const UNITS = { starter: 5, pro: 1_000_000, scale: 20 };
const planLimits = {
  starter: { ...UNLIMITED_PLANS.starter, unitsPerDay: UNITS.starter },
  pro: { ...UNLIMITED_PLANS.pro, unitsPerDay: UNITS.pro },
  scale: { ...UNLIMITED_PLANS.scale, unitsPerDay: UNITS.scale },
};

let h1: Harness;
let h2: Harness;
beforeAll(async () => {
  const redisPrefix = `test-units-${randomToken(8)}`;
  h1 = await startHarness({ redisPrefix, planLimits });
  h2 = await startHarness({ redisPrefix, planLimits });
});
afterAll(async () => {
  await h1.close();
  await h2.close();
});

/** Both instances read one clock, as processes on synchronised machines would. */
function setClock(iso: string) {
  h1.clock.set(new Date(iso));
  h2.clock.set(new Date(iso));
}

/**
 * `HH:MM:SS` UTC on the day `days` after today, as an ISO string. Kept within days of the real
 * date because web sessions are stamped with the wall clock when created (sessions.ts).
 */
function day(days: number, time = '00:00:00'): string {
  const now = new Date();
  const d = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + days));
  return `${d.toISOString().slice(0, 10)}T${time}.000Z`;
}

const accountPath = (id: string) => `/accounts/${id}`;

async function used(h: Harness, accountId: string, plan: 'starter' | 'pro' | 'scale', userId: string) {
  return (await unitUsage({
    redis: h.deps.redis, keys: h.deps.config, accountId, seatUserId: userId, limits: planLimits[plan], now: h.deps.now(),
  })).used;
}

/** Agents with long names until the identities list's body passes `bytes`. */
async function manyIdentities(h: Harness, accountId: string, approverUserId: string, count: number) {
  await h.deps.database.db.transaction(async (tx) => {
    for (let i = 0; i < count; i += 1) {
      await createAgent(tx, { accountId, name: `agent-${i}-${'x'.repeat(60)}`, approvedByUserId: approverUserId, approverRole: 'owner', scopes: [] });
    }
  });
}

test('a read costs 1 unit per 16 KB of response body (a large read costs more than 1); a write costs 1', async () => {
  setClock(day(2, '10:00:00'));
  const acct = await newAccount(h1, 'pro');
  const key = await newKey(h1, acct.accountId, acct.owner.email, ['account:manage', 'identities:manage']);
  await manyIdentities(h1, acct.accountId, acct.owner.userId, 150);
  const before = await used(h1, acct.accountId, 'pro', acct.owner.userId);
  expect(before).toBe(0);

  const big = await request(h1.api).get(`${accountPath(acct.accountId)}/identities?limit=200`).set(bearer(key));
  expect(big.status).toBe(200);
  const bytes = Buffer.byteLength(big.text);
  const expected = Math.ceil(bytes / READ_UNIT_BYTES);
  expect(expected).toBeGreaterThanOrEqual(3);
  expect(readCost(bytes)).toBe(expected);
  expect(big.headers['x-call-units-cost']).toBe(String(expected));
  // charged before the response left: visible at once, from the other instance too
  expect(await used(h2, acct.accountId, 'pro', acct.owner.userId)).toBe(expected);

  const small = await request(h2.api).get(`${accountPath(acct.accountId)}/identities?limit=1`).set(bearer(key));
  expect(small.status).toBe(200);
  expect(small.headers['x-call-units-cost']).toBe('1');
  expect(await used(h1, acct.accountId, 'pro', acct.owner.userId)).toBe(expected + 1);

  // a write costs 1 whatever its response's size
  const created = await request(h1.api).post(`${accountPath(acct.accountId)}/identities`).set(bearer(key)).send({ name: 'y'.repeat(80) });
  expect(created.status).toBe(201);
  expect(created.headers['x-call-units-cost']).toBe('1');
  expect(await used(h1, acct.accountId, 'pro', acct.owner.userId)).toBe(expected + 2);

  // an error answered by a route is a read like any other: minimum 1
  const denied = await request(h1.api).get(`${accountPath(acct.accountId)}/audit`).set(bearer(key));
  expect(denied.status).toBe(403);
  expect(await used(h1, acct.accountId, 'pro', acct.owner.userId)).toBe(expected + 3);

  // GET /accounts/{id} shows the use, its own first unit included
  const shown = await request(h2.api).get(accountPath(acct.accountId)).set(bearer(key));
  expect(shown.body.limits.units_per_day).toEqual({
    limit: UNITS.pro, used: expected + 4, remaining: UNITS.pro - expected - 4, resets_at: day(3),
  });
  expect(shown.body.limits.seat_user_id).toBe(acct.owner.userId);
  expect(shown.body).toMatchObject({ plan: 'pro', state: 'active', seats: 1 });
});

test('a request refused before routing (OPTIONS, a query not UTF-8) costs nothing, a credential sent or not (docs/api.md "Hostile input")', async () => {
  setClock(day(2, '11:00:00'));
  const acct = await newAccount(h1, 'pro');
  const key = await newKey(h1, acct.accountId, acct.owner.email, ['identities:manage']);
  const options = await request(h1.api).options(`${accountPath(acct.accountId)}/identities`).set(bearer(key));
  expect(options.status).toBe(404);
  expect(options.body.error.code).toBe('not_found');
  expect(options.headers['x-call-units-cost']).toBeUndefined();
  const query = await request(h1.api).get(`${accountPath(acct.accountId)}/identities?limit=%FF`).set(bearer(key));
  expect(query.status).toBe(400);
  expect(query.headers['x-call-units-cost']).toBeUndefined();
  expect(await used(h1, acct.accountId, 'pro', acct.owner.userId)).toBe(0);
});

test('spent → 429 budget_exceeded with budget and Retry-After until 00:00 UTC, on reads and writes; restored after the reset', async () => {
  setClock(day(1, '22:15:00'));
  const acct = await newAccount(h1, 'starter');
  const key = await newKey(h1, acct.accountId, acct.owner.email, ['account:manage', 'identities:manage']);
  const web = await signInWeb(h1, acct.owner.email);

  for (let i = 0; i < UNITS.starter; i += 1) {
    const res = await request(i % 2 ? h1.api : h2.api).get(accountPath(acct.accountId)).set(bearer(key));
    expect(res.status).toBe(200);
    expect(res.body.limits.units_per_day.used).toBe(i + 1);
  }
  const budget = { limit: UNITS.starter, used: UNITS.starter, resets_at: day(2) };
  const spent = [
    await request(h1.api).get(accountPath(acct.accountId)).set(bearer(key)),
    await request(h2.api).post(`${accountPath(acct.accountId)}/identities`).set(bearer(key)).send({ name: 'never' }),
    await web.agent.get(accountPath(acct.accountId)),
    await web.agent.post(`${accountPath(acct.accountId)}/identities`).set('X-CSRF-Token', web.csrf).send({ name: 'never' }),
  ];
  for (const res of spent) {
    expect(res.status).toBe(429);
    expect(res.body.error).toMatchObject({ code: 'budget_exceeded', scope: 'seat_units_per_day', budget });
    expect(res.headers['retry-after']).toBe(String(105 * 60)); // 22:15 → 00:00
    expect(res.headers['ratelimit-policy']).toBeDefined();
  }
  // refused calls cost nothing and wrote nothing
  expect(await used(h1, acct.accountId, 'starter', acct.owner.userId)).toBe(UNITS.starter);
  const names = await h1.deps.database.db.select({ name: identities.name }).from(identities).where(eq(identities.accountId, acct.accountId));
  expect(names.map((r) => r.name)).not.toContain('never');
  expect(names).toHaveLength(1);

  // another seat of the account still has its own budget
  const admin = await addPerson(h1, acct.accountId, 'admin');
  const adminKey = await newKey(h1, acct.accountId, admin.email, ['account:manage']);
  expect((await request(h1.api).get(accountPath(acct.accountId)).set(bearer(adminKey))).status).toBe(200);

  // one second before midnight: still spent
  setClock(day(1, '23:59:59'));
  const late = await request(h1.api).get(accountPath(acct.accountId)).set(bearer(key));
  expect(late.status).toBe(429);
  expect(late.headers['retry-after']).toBe('1');

  // the next UTC day: restored at once, on both instances and both hosts
  setClock(day(2));
  const fresh = await request(h2.api).get(accountPath(acct.accountId)).set(bearer(key));
  expect(fresh.status).toBe(200);
  expect(fresh.body.limits.units_per_day).toEqual({ limit: UNITS.starter, used: 1, remaining: UNITS.starter - 1, resets_at: day(3) });
  expect((await web.agent.get(accountPath(acct.accountId))).status).toBe(200);
  const write = await request(h1.api).post(`${accountPath(acct.accountId)}/identities`).set(bearer(key)).send({ name: 'after reset' });
  expect(write.status).toBe(201);
});

test('exactly the budget succeeds under concurrency from two instances', async () => {
  setClock(day(3, '12:00:00'));
  const acct = await newAccount(h1, 'scale');
  const keys = [
    await newKey(h1, acct.accountId, acct.owner.email, ['account:manage']),
    await newKey(h1, acct.accountId, acct.owner.email, ['account:manage']),
  ];
  const responses = await Promise.all(
    Array.from({ length: UNITS.scale + 9 }, (_, i) => request(i % 2 ? h1.api : h2.api).get(accountPath(acct.accountId)).set(bearer(keys[i % 2]))),
  );
  expect(responses.filter((r) => r.status === 200)).toHaveLength(UNITS.scale);
  const refused = responses.filter((r) => r.status !== 200);
  expect(refused).toHaveLength(9);
  for (const r of refused) expect(r.body.error.code).toBe('budget_exceeded');
  expect(await used(h1, acct.accountId, 'scale', acct.owner.userId)).toBe(UNITS.scale);
});

test('a large read admitted with units left is charged in full (may pass the limit); the next call is refused', async () => {
  setClock(day(4, '08:00:00'));
  const acct = await newAccount(h1, 'scale');
  const key = await newKey(h1, acct.accountId, acct.owner.email, ['identities:manage']);
  await manyIdentities(h1, acct.accountId, acct.owner.userId, 150);
  for (let i = 0; i < UNITS.scale - 1; i += 1) {
    expect((await request(h1.api).get(`${accountPath(acct.accountId)}/identities?limit=1`).set(bearer(key))).status).toBe(200);
  }
  const big = await request(h1.api).get(`${accountPath(acct.accountId)}/identities?limit=200`).set(bearer(key));
  expect(big.status).toBe(200);
  const cost = readCost(Buffer.byteLength(big.text));
  expect(cost).toBeGreaterThan(1);
  expect(big.headers['x-call-units-remaining']).toBe('0');
  expect(await used(h1, acct.accountId, 'scale', acct.owner.userId)).toBe(UNITS.scale - 1 + cost);
  const next = await request(h2.api).get(`${accountPath(acct.accountId)}/identities?limit=1`).set(bearer(key));
  expect(next.status).toBe(429);
  expect(next.body.error.budget).toEqual({ limit: UNITS.scale, used: UNITS.scale - 1 + cost, resets_at: day(5) });
});
