/**
 * Spec: Limits — calls per minute per seat (rules 1 and 2), Errors `rate_limited`.
 * Two API app instances on separate deps (own pool, own Redis connection, own limiter) share
 * one Redis prefix, as two API processes would.
 */
import request from 'supertest';
import { randomToken, PLAN_LIMITS, REDIS_RETRY_PAUSE_MS } from '@teamchat/core';
import {
  addPerson, bearer, newAccount, newAgent, newKey, signInWeb, startHarness, UNLIMITED_PLANS, type Harness,
} from '../../../../test/support/harness';

const PER_MINUTE = { starter: 4, pro: 10, scale: 12 };
const planLimits = {
  starter: { ...UNLIMITED_PLANS.starter, callsPerMinute: PER_MINUTE.starter },
  pro: { ...UNLIMITED_PLANS.pro, callsPerMinute: PER_MINUTE.pro },
  scale: { ...UNLIMITED_PLANS.scale, callsPerMinute: PER_MINUTE.scale },
};

let h1: Harness;
let h2: Harness;
beforeAll(async () => {
  const redisPrefix = `test-limits-${randomToken(8)}`;
  h1 = await startHarness({ redisPrefix, planLimits });
  h2 = await startHarness({ redisPrefix, planLimits });
  // A call through each instance first, then a pause past REDIS_RETRY_PAUSE_MS. A fresh process's
  // first calls run code for the first time; on a loaded machine a synchronous stretch longer
  // than the producer's command timeout made a Redis answer that had already come count as a
  // timeout (the timer runs before the socket is read), and the limiter then counted in its own
  // process for a second (docs/limits.md "When Redis is away"): the tests below measure the
  // shared counter, not that fallback.
  const warm = await newAccount(h1, 'scale');
  const key = await newKey(h1, warm.accountId, warm.owner.email, ['account:manage']);
  for (const h of [h1, h2]) await request(h.api).get(path(warm.accountId)).set(bearer(key));
  await new Promise((r) => setTimeout(r, REDIS_RETRY_PAUSE_MS + 100));
});
afterAll(async () => {
  await h1.close();
  await h2.close();
});

const path = (accountId: string) => `/accounts/${accountId}`;

function expectRateLimited(res: request.Response, limit: number) {
  expect(res.status).toBe(429);
  expect(res.body.error.code).toBe('rate_limited');
  expect(res.body.error.scope).toBe('seat_per_minute');
  const retryAfter = Number(res.headers['retry-after']);
  expect(Number.isInteger(retryAfter)).toBe(true);
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect(retryAfter).toBeLessThanOrEqual(60);
  expect(res.headers['ratelimit-policy']).toContain(`q=${limit}; w=60`);
  expect(res.headers['ratelimit']).toMatch(/r=0; t=\d+/);
  expect(res.headers['x-request-id']).toBeTruthy();
}

test('exactly N of N+k concurrent calls from two API instances for one seat succeed; the rest 429 with Retry-After', async () => {
  const acct = await newAccount(h1, 'pro');
  const keys = [
    await newKey(h1, acct.accountId, acct.owner.email, ['account:manage']),
    await newKey(h1, acct.accountId, acct.owner.email, ['account:manage']),
  ];
  const N = PER_MINUTE.pro;
  const total = N + 7;
  const responses = await Promise.all(
    Array.from({ length: total }, (_, i) =>
      request(i % 2 === 0 ? h1.api : h2.api).get(path(acct.accountId)).set(bearer(keys[Math.floor(i / 2) % 2]))),
  );
  const ok = responses.filter((r) => r.status === 200);
  const limited = responses.filter((r) => r.status !== 200);
  expect(ok).toHaveLength(N);
  expect(limited).toHaveLength(total - N);
  for (const res of limited) expectRateLimited(res, N);
  // Each instance got fewer than N calls: had they counted apart, every call would have passed.
});

test('every response under an account carries the IETF RateLimit-Policy and RateLimit headers (draft-8)', async () => {
  const acct = await newAccount(h1, 'starter');
  const key = await newKey(h1, acct.accountId, acct.owner.email, ['account:manage']);
  const first = await request(h1.api).get(path(acct.accountId)).set(bearer(key));
  expect(first.status).toBe(200);
  expect(first.headers['ratelimit-policy']).toMatch(new RegExp(`^"${PER_MINUTE.starter}-in-1min"; q=${PER_MINUTE.starter}; w=60; pk=:[A-Za-z0-9+/=]+:$`));
  expect(first.headers['ratelimit']).toMatch(new RegExp(`^"${PER_MINUTE.starter}-in-1min"; r=${PER_MINUTE.starter - 1}; t=\\d+$`));
  // an error answered by a route (here 404 and 403) still carries them
  const missing = await request(h1.api).get(`${path(acct.accountId)}/jobs/job_nope`).set(bearer(key));
  expect(missing.status).toBe(404);
  expect(missing.headers['ratelimit']).toContain(`r=${PER_MINUTE.starter - 2}`);
  const noScope = await request(h1.api).get(`${path(acct.accountId)}/members`).set(bearer(key));
  expect(noScope.status).toBe(403);
  expect(noScope.headers['ratelimit']).toContain(`r=${PER_MINUTE.starter - 3}`);
  // GET /accounts/{id} shows the seat's use of the minute
  const shown = await request(h2.api).get(path(acct.accountId)).set(bearer(key));
  expect(shown.status).toBe(200);
  expect(shown.body.limits.calls_per_minute).toMatchObject({ limit: PER_MINUTE.starter, used: 4, remaining: 0 });
  expectRateLimited(await request(h2.api).get(path(acct.accountId)).set(bearer(key)), PER_MINUTE.starter);
});

test('the limit follows the account plan', async () => {
  const scale = await newAccount(h1, 'scale');
  const key = await newKey(h1, scale.accountId, scale.owner.email, ['account:manage']);
  const res = await request(h1.api).get(path(scale.accountId)).set(bearer(key));
  expect(res.headers['ratelimit-policy']).toContain(`q=${PER_MINUTE.scale};`);
  expect(res.body.limits.calls_per_minute.limit).toBe(PER_MINUTE.scale);
  // and the default table is the spec's
  expect([PLAN_LIMITS.starter.callsPerMinute, PLAN_LIMITS.pro.callsPerMinute, PLAN_LIMITS.scale.callsPerMinute]).toEqual([30, 60, 120]);
});

test("all of a seat's credentials share one allowance: two keys, an agent token it approved, its web session", async () => {
  const acct = await newAccount(h1, 'pro');
  const keyA = await newKey(h1, acct.accountId, acct.owner.email, ['account:manage']);
  const keyB = await newKey(h1, acct.accountId, acct.owner.email, ['account:manage']);
  const agent = await newAgent(h1, acct.accountId, acct.owner.email, ['account:manage']);
  const web = await signInWeb(h1, acct.owner.email);

  for (let i = 0; i < PER_MINUTE.pro; i += 1) {
    const res = await request(i % 2 ? h1.api : h2.api).get(path(acct.accountId)).set(bearer(keyA));
    expect(res.status).toBe(200);
  }
  expectRateLimited(await request(h1.api).get(path(acct.accountId)).set(bearer(keyB)), PER_MINUTE.pro);
  expectRateLimited(await request(h2.api).get(path(acct.accountId)).set(bearer(agent.token)), PER_MINUTE.pro);
  expectRateLimited(await web.agent.get(path(acct.accountId)), PER_MINUTE.pro);
});

test('two seats do not share: another person of the same account keeps a full allowance', async () => {
  const acct = await newAccount(h1, 'pro');
  const admin = await addPerson(h1, acct.accountId, 'admin');
  const ownerKey = await newKey(h1, acct.accountId, acct.owner.email, ['account:manage']);
  const adminKey = await newKey(h1, acct.accountId, admin.email, ['account:manage']);

  await Promise.all(Array.from({ length: PER_MINUTE.pro + 2 }, () => request(h1.api).get(path(acct.accountId)).set(bearer(ownerKey))));
  expectRateLimited(await request(h2.api).get(path(acct.accountId)).set(bearer(ownerKey)), PER_MINUTE.pro);

  const responses = await Promise.all(
    Array.from({ length: PER_MINUTE.pro }, (_, i) => request(i % 2 ? h1.api : h2.api).get(path(acct.accountId)).set(bearer(adminKey))),
  );
  expect(responses.map((r) => r.status)).toEqual(Array(PER_MINUTE.pro).fill(200));
});

test('the same person in two accounts has two seats', async () => {
  const a = await newAccount(h1, 'pro');
  const b = await newAccount(h1, 'pro');
  await addPerson(h1, b.accountId, 'admin', a.owner.email);
  const keyA = await newKey(h1, a.accountId, a.owner.email, ['account:manage']);
  const keyB = await newKey(h1, b.accountId, a.owner.email, ['account:manage']);
  await Promise.all(Array.from({ length: PER_MINUTE.pro + 1 }, () => request(h1.api).get(path(a.accountId)).set(bearer(keyA))));
  expectRateLimited(await request(h1.api).get(path(a.accountId)).set(bearer(keyA)), PER_MINUTE.pro);
  expect((await request(h1.api).get(path(b.accountId)).set(bearer(keyB))).status).toBe(200);
});

test('with limits disabled (benchmarks) nothing is counted or refused', async () => {
  const off = await startHarness({ planLimits, limitsEnabled: false });
  try {
    const acct = await newAccount(off, 'starter');
    const key = await newKey(off, acct.accountId, acct.owner.email, ['account:manage']);
    for (let i = 0; i < PER_MINUTE.starter + 2; i += 1) {
      const res = await request(off.api).get(path(acct.accountId)).set(bearer(key));
      expect(res.status).toBe(200);
      expect(res.headers['ratelimit']).toBeUndefined();
      expect(res.body.limits).toMatchObject({ enforced: false, calls_per_minute: { used: null }, units_per_day: { used: null } });
    }
  } finally {
    await off.close();
  }
});
