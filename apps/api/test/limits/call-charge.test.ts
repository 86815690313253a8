/**
 * One Redis round trip per call: the per-minute count and the call's first unit are decided by one Redis script
 * (core limits/call-charge.ts), on the clock of deps.now(). Spec: Limits rules 1–3.
 */
import request from 'supertest';
import type Redis from 'ioredis';
import { minuteKey, randomToken, unitUsage } from '@teamchat/core';
import { bearer, newAccount, newKey, startHarness, UNLIMITED_PLANS, type Harness } from '../../../../test/support/harness';

const PER_MINUTE = 5;
const UNITS = 1_000;
const planLimits = { ...UNLIMITED_PLANS, pro: { ...UNLIMITED_PLANS.pro, callsPerMinute: PER_MINUTE, unitsPerDay: UNITS } };

let h: Harness;
let h2: Harness;
beforeAll(async () => {
  const redisPrefix = `test-call-${randomToken(8)}`;
  h = await startHarness({ redisPrefix, planLimits });
  h2 = await startHarness({ redisPrefix, planLimits });
});
afterAll(async () => {
  await h.close();
  await h2.close();
});

/** Counts the commands `redis` sends while `fn` runs (a script is one command). */
async function commandsDuring(redis: Redis, fn: () => Promise<unknown>): Promise<string[]> {
  const sent: string[] = [];
  const original = redis.sendCommand;
  redis.sendCommand = function (this: Redis, ...args: Parameters<Redis['sendCommand']>) {
    // The connection watch's PING (watchRedisConnection, every 2 s) is not the call's.
    if (args[0].name !== 'ping') sent.push(args[0].name);
    return original.apply(this, args);
  };
  try {
    await fn();
  } finally {
    redis.sendCommand = original;
  }
  return sent;
}

const used = (h: Harness, accountId: string, userId: string) =>
  unitUsage({ redis: h.deps.redis, keys: h.deps.config, accountId, seatUserId: userId, limits: planLimits.pro, now: h.deps.now() });

test('a call under an account costs ONE Redis command (minute and first unit in one script); a small read adds none', async () => {
  const acct = await newAccount(h, 'pro');
  const key = await newKey(h, acct.accountId, acct.owner.email, ['account:manage']);
  await request(h.api).get(`/accounts/${acct.accountId}`).set(bearer(key)); // loads the script
  const sent = await commandsDuring(h.deps.redis as Redis, async () => {
    const res = await request(h.api).get(`/accounts/${acct.accountId}`).set(bearer(key));
    expect(res.status).toBe(200);
    expect(res.body.limits.calls_per_minute.used).toBe(2);
    expect(res.body.limits.units_per_day.used).toBe(2);
  });
  expect(sent).toEqual(['evalsha']);
});

test('spec Limits rules 1–3: of N+k concurrent calls from two processes exactly N pass and exactly N units are charged', async () => {
  const acct = await newAccount(h, 'pro');
  const key = await newKey(h, acct.accountId, acct.owner.email, ['account:manage']);
  const responses = await Promise.all(Array.from({ length: PER_MINUTE + 4 }, (_, i) =>
    request(i % 2 ? h.api : h2.api).get(`/accounts/${acct.accountId}`).set(bearer(key))));
  expect(responses.filter((r) => r.status === 200)).toHaveLength(PER_MINUTE);
  expect(responses.filter((r) => r.status === 429 && r.body.error.code === 'rate_limited')).toHaveLength(4);
  expect((await used(h, acct.accountId, acct.owner.userId)).used).toBe(PER_MINUTE);
});

test('the minute runs on deps.now(): a minute later (by that clock) the seat has a new window', async () => {
  const acct = await newAccount(h, 'pro');
  const key = await newKey(h, acct.accountId, acct.owner.email, ['account:manage']);
  const start = new Date();
  h.clock.set(start);
  try {
    for (let i = 0; i < PER_MINUTE; i += 1) expect((await request(h.api).get(`/accounts/${acct.accountId}`).set(bearer(key))).status).toBe(200);
    const refused = await request(h.api).get(`/accounts/${acct.accountId}`).set(bearer(key));
    expect(refused.status).toBe(429);
    expect(Number(refused.headers['retry-after'])).toBe(60);
    h.clock.set(new Date(start.getTime() + 30_000));
    const later = await request(h.api).get(`/accounts/${acct.accountId}`).set(bearer(key));
    expect(later.status).toBe(429);
    expect(Number(later.headers['retry-after'])).toBe(30);
    h.clock.set(new Date(start.getTime() + 60_000));
    const next = await request(h.api).get(`/accounts/${acct.accountId}`).set(bearer(key));
    expect(next.status).toBe(200);
    expect(next.body.limits.calls_per_minute).toMatchObject({ used: 1, remaining: PER_MINUTE - 1, resets_at: new Date(start.getTime() + 120_000).toISOString() });
  } finally {
    h.clock.reset();
  }
  // the window lives in the seat's key of the one scheme
  expect(await h.deps.redis.exists(minuteKey(h.deps.config, acct.accountId, acct.owner.userId))).toBe(1);
});
