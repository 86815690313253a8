/**
 * Availability when Redis is away. PostgreSQL is the source of truth, so the API
 * keeps serving while Redis is down or frozen: the per-minute limit falls back to a count in each
 * process, call units are not charged, the sign-in throttle counts in process; each degraded
 * decision is counted and warned about at most once per interval; everything returns to Redis by
 * itself once it answers again (docs/limits.md "When Redis is away").
 *
 * The Redis here is a redis-server this file starts, kills, freezes and restarts on a spare port.
 */
import { Writable } from 'node:stream';
import request from 'supertest';
import winston from 'winston';
import {
  assertManualDeliveryAllowed, createLogger, degradedDecisionCounts, DEFAULT_REDIS_COMMAND_TIMEOUT_MS, randomToken, takeManualDeliveries, unitUsage, waitReady,
  type DegradedDecision,
} from '@teamchat/core';
import { webhookQueuesFor } from '@teamchat/delivery';
import { createApp } from '../../src/app';
import {
  bearer, newAccount, newKey, signInWeb, startHarness, UNLIMITED_PLANS, PASSWORD, type Harness,
} from '../../../../test/support/harness';
import { testRedisServer, type TestRedisServer } from '../../../../test/support/redis-server';
import { hookUrl, registered, webhookAccount } from '../webhooks/endpoint-helpers';

const PER_MINUTE = 6;
const planLimits = { ...UNLIMITED_PLANS, pro: { ...UNLIMITED_PLANS.pro, callsPerMinute: PER_MINUTE } };

let server: TestRedisServer;
let h: Harness;
let h2: Harness;
beforeAll(async () => {
  server = await testRedisServer();
  const redisPrefix = `test-away-${randomToken(8)}`;
  // The service's own command timeout (the harness raises it): a frozen Redis must cost 1 s.
  const redisCommandTimeoutMs = DEFAULT_REDIS_COMMAND_TIMEOUT_MS;
  // Loopback receivers allowed: the webhook test below registers URLs where nothing listens.
  const webhookAllowedHosts = ['127.0.0.1'];
  h = await startHarness({ redisUrl: server.url, redisPrefix, planLimits, redisCommandTimeoutMs, webhookAllowedHosts });
  h2 = await startHarness({ redisUrl: server.url, redisPrefix, planLimits, redisCommandTimeoutMs, webhookAllowedHosts });
});
afterAll(async () => {
  await h?.close();
  await h2?.close();
  await server?.stop();
});
afterEach(async () => {
  server.thaw();
  await server.start();
  await Promise.all([waitReady(h.deps.redis, 10_000), waitReady(h2.deps.redis, 10_000)]);
});

/** Kills Redis and waits until both harnesses' connections have noticed. */
async function redisDown(): Promise<void> {
  await server.stop();
  for (let i = 0; i < 100 && (h.deps.redis.status === 'ready' || h2.deps.redis.status === 'ready'); i += 1) {
    await new Promise((r) => setTimeout(r, 20));
  }
  expect(h.deps.redis.status).not.toBe('ready');
}

async function redisUp(): Promise<void> {
  await server.start();
  await Promise.all([waitReady(h.deps.redis, 10_000), waitReady(h2.deps.redis, 10_000)]);
}

/** The app of `h` with a logger whose JSON lines land in an array. */
function appWithCapturedLogs(host: 'api' | 'web' = 'api') {
  const lines: Array<Record<string, unknown>> = [];
  const logger = createLogger('api', 'info');
  logger.clear().add(new winston.transports.Stream({
    stream: new Writable({ write(chunk, _enc, done) { lines.push(JSON.parse(String(chunk))); done(); } }),
  }));
  return { app: createApp({ ...h.deps, logger }, host), lines };
}

const delta = (before: Record<DegradedDecision, number>, kind: DegradedDecision) => degradedDecisionCounts()[kind] - before[kind];

async function accountWithKey(scopes: string[] = ['account:manage']) {
  const acct = await newAccount(h, 'pro');
  const key = await newKey(h, acct.accountId, acct.owner.email, scopes);
  const channel = await request(h.api).post(`/accounts/${acct.accountId}/channels`).set(bearer(key)).send({ name: `c-${randomToken(6)}` });
  expect(channel.status).toBe(201);
  return { acct, key, channelId: channel.body.id as string };
}

test('while Redis is down, GET and POST on the API host answer 2xx; units are not charged and GET /accounts/{id} says so', async () => {
  const { acct, key, channelId } = await accountWithKey();
  const messages = `/accounts/${acct.accountId}/channels/${channelId}/messages`;
  await redisDown();
  const before = degradedDecisionCounts();

  const posted = await request(h.api).post(messages).set(bearer(key)).send({ text: 'while Redis is away' });
  expect(posted.status).toBe(201);
  const read = await request(h.api).get(messages).set(bearer(key));
  expect(read.status).toBe(200);
  expect(read.body.data.map((m: { text: string }) => m.text)).toEqual(['while Redis is away']);
  // the per-minute limit still answers with its headers (counted in this process) …
  expect(read.headers['ratelimit']).toMatch(/r=\d+; t=\d+/);
  // … but nothing was charged, so no unit figures are claimed
  expect(read.headers['x-call-units-remaining']).toBeUndefined();

  const account = await request(h.api).get(`/accounts/${acct.accountId}`).set(bearer(key));
  expect(account.status).toBe(200);
  expect(account.body.limits).toMatchObject({ enforced: true, degraded: true, units_per_day: { used: null, remaining: null } });
  expect(account.body.limits.calls_per_minute.used).toBe(3);

  expect(delta(before, 'minute_limit_local')).toBe(3);
  expect(delta(before, 'units_not_charged')).toBe(3);
});

test('GET /usage says degraded with null figures while Redis is down (unknown, not zero), and its figures once Redis is back', async () => {
  const { acct, key } = await accountWithKey();
  const usage = () => request(h.api).get(`/accounts/${acct.accountId}/usage`).set(bearer(key)).timeout(8_000);
  await redisDown();
  const away = await usage();
  expect(away.status).toBe(200);
  expect(away.body.degraded).toBe(true);
  expect(away.body.seats).toEqual([expect.objectContaining({ calls_this_minute: null, units_today: null })]);

  await redisUp();
  // The limits try Redis again after their pause (REDIS_RETRY_PAUSE_MS).
  let back = await usage();
  for (let i = 0; i < 30 && back.body.degraded; i += 1) {
    await new Promise((r) => setTimeout(r, 100));
    back = await usage();
  }
  expect(back.body.degraded).toBe(false);
  expect(back.body.seats[0].calls_this_minute).toEqual(expect.any(Number));
  expect(back.body.seats[0].units_today).toEqual(expect.any(Number));
});

test('while Redis is down the per-minute limit still bites, counted in each process', async () => {
  const { acct, key } = await accountWithKey();
  await redisDown();
  for (let i = 0; i < PER_MINUTE; i += 1) {
    expect((await request(h.api).get(`/accounts/${acct.accountId}`).set(bearer(key))).status).toBe(200);
  }
  const refused = await request(h.api).get(`/accounts/${acct.accountId}`).set(bearer(key));
  expect(refused.status).toBe(429);
  expect(refused.body.error).toMatchObject({ code: 'rate_limited', scope: 'seat_per_minute' });
  expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
  // another API process counts on its own: the approximation allows one allowance per process
  expect((await request(h2.api).get(`/accounts/${acct.accountId}`).set(bearer(key))).status).toBe(200);
  // a new minute (the harness clock) starts a new local window
  h.clock.advance(61_000);
  try {
    expect((await request(h.api).get(`/accounts/${acct.accountId}`).set(bearer(key))).status).toBe(200);
  } finally {
    h.clock.reset();
  }
});

test('each degraded decision is counted, and warned about at most once per interval per kind', async () => {
  const { acct, key } = await accountWithKey();
  const { app, lines } = appWithCapturedLogs();
  await redisDown();
  const before = degradedDecisionCounts();
  for (let i = 0; i < 4; i += 1) {
    expect((await request(app).get(`/accounts/${acct.accountId}`).set(bearer(key))).status).toBe(200);
  }
  const warnings = () => lines.filter((l) => l.level === 'warn' && l.message === 'limits degraded: Redis unavailable');
  expect(delta(before, 'minute_limit_local')).toBe(4);
  expect(delta(before, 'units_not_charged')).toBe(4);
  expect(warnings().map((w) => w.decision).sort()).toEqual(['minute_limit_local', 'units_not_charged']);
  for (const w of warnings()) expect(typeof w.error).toBe('string');

  // the next interval (by the deps clock) warns again, once, with the count of the quiet period
  h.clock.advance(61_000);
  try {
    expect((await request(app).get(`/accounts/${acct.accountId}`).set(bearer(key))).status).toBe(200);
    expect((await request(app).get(`/accounts/${acct.accountId}`).set(bearer(key))).status).toBe(200);
  } finally {
    h.clock.reset();
  }
  const later = warnings().slice(2);
  expect(later.map((w) => w.decision).sort()).toEqual(['minute_limit_local', 'units_not_charged']);
  for (const w of later) expect(w.suppressed).toBe(3);
});

test('limits return to Redis by themselves once it answers again (shared across processes, units charged)', async () => {
  const { acct, key } = await accountWithKey();
  await redisDown();
  expect((await request(h.api).get(`/accounts/${acct.accountId}`).set(bearer(key))).status).toBe(200);
  await redisUp();
  const before = degradedDecisionCounts();

  // A fresh Redis counts from zero; two processes share its count, so exactly PER_MINUTE pass.
  const statuses: number[] = [];
  for (let i = 0; i < PER_MINUTE + 2; i += 1) {
    const res = await request(i % 2 ? h.api : h2.api).get(`/accounts/${acct.accountId}`).set(bearer(key));
    statuses.push(res.status);
    if (res.status === 200) {
      expect(res.body.limits.degraded).toBe(false);
      expect(res.headers['x-call-units-remaining']).toBeDefined();
    }
  }
  expect(statuses).toEqual([...Array(PER_MINUTE).fill(200), 429, 429]);
  const used = await unitUsage({
    redis: h.deps.redis, keys: h.deps.config, accountId: acct.accountId, seatUserId: acct.owner.userId,
    limits: planLimits.pro, now: h.deps.now(),
  });
  expect(used.used).toBe(PER_MINUTE);
  expect(delta(before, 'minute_limit_local')).toBe(0);
  expect(delta(before, 'units_not_charged')).toBe(0);
});

test('a frozen Redis (connected, answering nothing) does not hang requests', async () => {
  const { acct, key, channelId } = await accountWithKey();
  const messages = `/accounts/${acct.accountId}/channels/${channelId}/messages`;
  server.freeze();
  try {
    const posted = await request(h.api).post(messages).set(bearer(key)).send({ text: 'Redis is frozen' }).timeout(8_000);
    expect(posted.status).toBe(201);
    const read = await request(h.api).get(messages).set(bearer(key)).timeout(8_000);
    expect(read.status).toBe(200);
  } finally {
    server.thaw();
  }
});

test('the web host needs no Redis: sign-in, a read and a write answer 2xx; the failed sign-in throttle holds in process', async () => {
  const { acct, channelId } = await accountWithKey();
  await redisDown();
  const web = await signInWeb(h, acct.owner.email);
  expect((await web.agent.get(`/accounts/${acct.accountId}/channels/${channelId}/messages`)).status).toBe(200);
  const posted = await web.agent.post(`/accounts/${acct.accountId}/channels/${channelId}/messages`)
    .set('X-CSRF-Token', web.csrf).send({ text: 'from the web while Redis is away' });
  expect(posted.status).toBe(201);

  const before = degradedDecisionCounts();
  const wrong = () => request(h.web).post('/auth/sign-in').send({ email: acct.owner.email, password: `${PASSWORD} wrong` });
  for (let i = 0; i < 10; i += 1) expect((await wrong()).status).toBe(401);
  const throttled = await wrong();
  expect(throttled.status).toBe(429);
  expect(throttled.body.error).toMatchObject({ code: 'rate_limited', scope: 'sign_in' });
  expect(delta(before, 'sign_in_throttle_local')).toBeGreaterThanOrEqual(11);
});

test('approving a deletion while Redis is down answers (the worker sweep enqueues the job later); it never hangs', async () => {
  const { acct, key, channelId } = await accountWithKey();
  const posted = await request(h.api).post(`/accounts/${acct.accountId}/channels/${channelId}/messages`).set(bearer(key)).send({ text: 'to delete' });
  const web = await signInWeb(h, acct.owner.email);
  await redisDown();
  const del = await request(h.api).delete(`/accounts/${acct.accountId}/channels/${channelId}/messages/${posted.body.ts}`).set(bearer(key));
  expect(del.status).toBe(403);
  expect(del.body.error.code).toBe('confirmation_required');
  const approvalPath = new URL(del.body.error.approval_url as string).pathname;
  const approved = await web.agent.post(`${approvalPath}/approve`).set('X-CSRF-Token', web.csrf).timeout(8_000);
  expect(approved.status).toBe(202);
  expect(approved.body.job_id).toMatch(/^job_/);
});

test('test events, replays, enabling and a mirror\'s test while Redis is down answer 2xx, never 500: nothing is sent, the replay waits for Redis', async () => {
  const a = await webhookAccount(h);
  const ep = await registered(a.web, { url: await hookUrl() });
  const channel = await request(h.api).post(`/accounts/${a.accountId}/channels`).set(bearer(await newKey(h, a.accountId, a.owner.email, ['account:manage'])))
    .send({ name: `c-${randomToken(6)}` });
  const mirror = await a.web.post('/mirrors', { url: await hookUrl('/mirror'), channels: [channel.body.id], format: 'slack' });
  expect(mirror.status).toBe(201);
  await a.web.patch(`/webhooks/${ep.id}`, { enabled: false });
  const before = degradedDecisionCounts();
  await redisDown();

  // The test event: its limit counted in this process, no in-flight slot to take, so not attempted.
  const tested = await a.key.post(`/webhooks/${ep.id}/test`).timeout(8_000);
  expect(tested.status).toBe(200);
  expect(tested.body).toMatchObject({ status: 'failed', response_status: null, error: 'not attempted: Redis is unavailable, so no in-flight slot could be taken' });
  expect(delta(before, 'manual_limit_local')).toBeGreaterThanOrEqual(1);

  // A replay of it is logged and waits, open, for the engine once Redis is back.
  const replayed = await a.key.post(`/webhooks/${ep.id}/deliveries/${tested.body.delivery_id}/replay`).timeout(8_000);
  expect(replayed.status).toBe(200);
  expect(replayed.body).toMatchObject({ status: 'pending', error: expect.stringMatching(/^waiting: Redis is unavailable/) });

  // The bulk replay's count and start: the hour's allowance counted in this process (one replay spent above).
  const since = encodeURIComponent(new Date(Date.now() - 3600_000).toISOString());
  const preview = await a.web.get(`/webhooks/${ep.id}/replay-failed?since=${since}`).timeout(8_000);
  expect(preview.status).toBe(200);
  expect(preview.body).toMatchObject({ replays_left_this_hour: 59 });
  const bulk = await a.web.post(`/webhooks/${ep.id}/replay-failed`, { since: decodeURIComponent(since) }).timeout(8_000);
  expect(bulk.status).toBe(202);

  // Enabling stands; its test event is reported not attempted.
  const enabled = await a.web.patch(`/webhooks/${ep.id}`, { enabled: true }).timeout(8_000);
  expect(enabled.status).toBe(200);
  expect(enabled.body).toMatchObject({ enabled: true, test_delivery: { status: 'failed', error: expect.stringMatching(/^not attempted: Redis/) } });

  // A mirror's test: its call unit cannot be charged, so nothing is sent.
  const mirrorTest = await a.web.post(`/mirrors/${mirror.body.id}/test`).timeout(8_000);
  expect(mirrorTest.status).toBe(200);
  expect(mirrorTest.body).toMatchObject({ status: 'failed', error: 'not attempted: Redis is unavailable, so its call unit could not be charged' });
});

test('while Redis refuses writes (out of memory), a test event and a replay answer 2xx, never 500: nothing is sent', async () => {
  const a = await webhookAccount(h);
  const ep = await registered(a.web, { url: await hookUrl() });
  const first = await a.key.post(`/webhooks/${ep.id}/test`).timeout(8_000);
  expect(first.status).toBe(200);
  // Redis answers, but every write is refused (OOM): the slot may be taken, the unit cannot be charged.
  await h.deps.redis.config('SET', 'maxmemory-policy', 'noeviction');
  await h.deps.redis.config('SET', 'maxmemory', '1');
  try {
    const tested = await a.key.post(`/webhooks/${ep.id}/test`).timeout(8_000);
    expect(tested.status).toBe(200);
    expect(tested.body).toMatchObject({ status: 'failed', response_status: null, error: expect.stringMatching(/^not attempted: Redis is unavailable/) });
    const replayed = await a.key.post(`/webhooks/${ep.id}/deliveries/${first.body.delivery_id}/replay`).timeout(8_000);
    expect(replayed.status).toBe(200);
    expect(replayed.body).toMatchObject({ status: 'pending', response_status: null, error: expect.stringMatching(/^waiting: Redis is unavailable/) });
  } finally {
    await h.deps.redis.config('SET', 'maxmemory', '0');
  }
});

test('spec Limits, replays 60 per hour per endpoint, while Redis is down: a bulk replay takes the hour\'s allowance whole or not at all, and single replays share it', async () => {
  await redisDown();
  const endpointId = `whe_${randomToken(10)}`;
  const log = h.deps.logger;
  const take = (n: number) => takeManualDeliveries(h.deps.redis, h.deps.config, 'replay', endpointId, n, log);
  expect(await take(61)).toEqual({ taken: false, retryAfterS: expect.any(Number) });
  expect(await take(59)).toEqual({ taken: true });
  // The 60th, by the single-replay route's check; then the window is spent for both.
  await expect(assertManualDeliveryAllowed(h.deps.redis, h.deps.config, 'replay', endpointId, log)).resolves.toBeUndefined();
  await expect(assertManualDeliveryAllowed(h.deps.redis, h.deps.config, 'replay', endpointId, log)).rejects.toMatchObject({ code: 'rate_limited' });
  const refused = await take(1);
  expect(refused.taken).toBe(false);
  expect(refused).toMatchObject({ retryAfterS: expect.any(Number) });
  expect((refused as { retryAfterS: number }).retryAfterS).toBeGreaterThan(3500);
});

test('the webhook queues\' adds fail at once while Redis is down, whichever copy of the deps asks first (BullMQ\'s first use of a queue waits for Redis)', async () => {
  // An app built on a copy of the deps (as createApp({ ...deps, logger }) makes) shares the
  // process's queues, made while Redis answered; a queue first used while Redis is away would
  // wait for it, and its caller with it.
  const copy = { ...h.deps };
  await redisDown();
  const started = Date.now();
  await expect(webhookQueuesFor(copy).enqueueDelivery(`dlv_${randomToken(8)}`)).rejects.toThrow();
  await expect(webhookQueuesFor(copy).wakeAccounts([`acct_${randomToken(8)}`])).rejects.toThrow();
  expect(Date.now() - started).toBeLessThan(3_000);
});
