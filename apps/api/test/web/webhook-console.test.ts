import request from 'supertest';
import { startWorker, type RunningWorker } from '../../../worker/src/worker';
import { manualDeliveryKey } from '@teamchat/core';
import { sql } from '@teamchat/db';
import { addPerson, bearer, newAccount, newKey, signInWeb, type Harness } from '../../../../test/support/harness';
import { startReceiver, type Receiver } from '../../../../test/support/https-receiver';
import { createEndpointRow, eventually, startWebhookHarness } from '../../../../test/support/webhooks';

/**
 * The web app's additive webhook routes (docs/web.md): delivery log filters and one delivery's
 * request; "Replay failed since…" (count, a background job, the spec's replay limit of 60 per
 * hour per endpoint); per-endpoint stats from SQL aggregates.
 */
let h: Harness;
let rx: Receiver;
let worker: RunningWorker;

beforeAll(async () => {
  h = await startWebhookHarness();
  rx = await startReceiver();
  worker = startWorker(h.deps, { maintenanceIntervalMs: 60_000, webhooks: { accountIds: [] } });
});
afterAll(async () => {
  await worker.close();
  await rx.close();
  await h.close();
});
beforeEach(() => {
  rx.fallback = { status: 200 };
});

async function setup() {
  const a = await newAccount(h);
  const key = await newKey(h, a.accountId, a.owner.email, ['webhooks:manage', 'account:manage']);
  const path = `/c-${Math.random().toString(36).slice(2, 8)}`;
  const ep = await createEndpointRow(h, { accountId: a.accountId, createdByUserId: a.owner.userId, url: rx.url(path), authorization: 'hunter2-token' });
  const base = `/accounts/${a.accountId}/webhooks/${ep.id}`;
  const get = (p: string) => request(h.api).get(base + p).set(bearer(key));
  const post = (p: string, body?: object) => request(h.api).post(base + p).set(bearer(key)).send(body ?? {});
  const mine = () => rx.received.filter((r) => r.path === path);
  return { a, key, ep, base, get, post, mine };
}

test('delivery log: status (several), event type, event id and time filters combine; a bad status is 400', async () => {
  const s = await setup();
  rx.script({ status: 500 });
  const failed = (await s.post('/test').expect(200)).body;
  expect(failed.status).toBe('failed');
  const ok = (await s.post('/test').expect(200)).body;
  expect(ok.status).toBe('delivered');

  const ids = async (q: string) => (await s.get(`/deliveries${q}`).expect(200)).body.data.map((d: { id: string }) => d.id);
  expect(await ids('?status=failed')).toEqual([failed.delivery_id]);
  expect(await ids('?status=failed,delivered')).toEqual([ok.delivery_id, failed.delivery_id]);
  expect(await ids('?status=dead')).toEqual([]);
  expect(await ids('?event_type=test')).toHaveLength(2);
  expect(await ids('?event_type=message.posted')).toEqual([]);
  const eventId = (await s.get('/deliveries?status=delivered').expect(200)).body.data[0].event_id;
  expect(await ids(`?event_id=${eventId}`)).toEqual([ok.delivery_id]);
  expect(await ids(`?since=${new Date(Date.now() + 60_000).toISOString()}`)).toEqual([]);
  const bad = await s.get('/deliveries?status=dead,nope').expect(400);
  expect(bad.body.error).toMatchObject({ code: 'invalid_request', field: 'status' });
});

test('one delivery: the body exactly as the receiver got it, the service headers, the custom header masked', async () => {
  const s = await setup();
  const r = (await s.post('/test').expect(200)).body;
  const got = s.mine().find((x) => x.headers['x-service-delivery'] === r.delivery_id)!;
  const d = (await s.get(`/deliveries/${r.delivery_id}`).expect(200)).body;
  expect(d).toMatchObject({ id: r.delivery_id, status: 'delivered', response_status: 200 });
  expect(d.request.body).toBe(got.body);
  expect(d.request.headers['X-Service-Event']).toBe('test');
  expect(d.request.headers['X-Service-Attempt']).toBe('1');
  expect(d.request.headers.Authorization).toBe('Bearer ••••••••');
  expect(JSON.stringify(d)).not.toContain('hunter2-token');
  await s.get('/deliveries/dlv_unknown').expect(404);
});

test('replay failed since: counts each failed event once, replays them in a job with the same event ids, then nothing is left to count', async () => {
  const s = await setup();
  const since = new Date(Date.now() - 60_000).toISOString();
  rx.script({ status: 500 }, { status: 503 });
  await s.post('/test').expect(200);
  await s.post('/test').expect(200);
  await s.post('/test').expect(200); // delivered: not counted
  const failedEvents = s.mine().slice(0, 2).map((r) => JSON.parse(r.body).id);

  const preview = (await s.get(`/replay-failed?since=${encodeURIComponent(since)}`).expect(200)).body;
  expect(preview).toMatchObject({ count: 2, replays_left_this_hour: 60, max: 60 });

  const started = (await s.post('/replay-failed', { since }).expect(202)).body;
  expect(started).toMatchObject({ count: 2, job_id: expect.stringMatching(/^job_/), job_url: `/accounts/${s.a.accountId}/jobs/${started.job_id}` });
  const job = await eventually(async () => {
    const j = (await request(h.api).get(started.job_url).set(bearer(s.key)).expect(200)).body;
    return j.status === 'succeeded' || j.status === 'failed' ? j : null;
  });
  expect(job).toMatchObject({ status: 'succeeded', result: { replayed: 2, skipped: 0, outcomes: { delivered: 2 } } });
  const replayedEvents = s.mine().slice(3).map((r) => JSON.parse(r.body).id);
  expect(replayedEvents.sort()).toEqual([...failedEvents].sort());
  // the replays were delivered: no event's latest delivery is failed any more
  expect((await s.get(`/replay-failed?since=${encodeURIComponent(since)}`).expect(200)).body).toMatchObject({ count: 0, replays_left_this_hour: 58 });
});

test('the replay job acts for its requester as they are when it runs: demoted to member, it replays nothing', async () => {
  const s = await setup();
  const since = new Date(Date.now() - 60_000).toISOString();
  rx.script({ status: 500 });
  await s.post('/test').expect(200);
  const admin = await addPerson(h, s.a.accountId, 'admin');
  const web = await signInWeb(h, admin.email);
  // the worker of this file runs jobs at once; stop it from taking this one before the demotion
  await worker.close();
  const started = (await web.agent.post(`${s.base}/replay-failed`).set('X-CSRF-Token', web.csrf).send({ since }).expect(202)).body;
  await h.deps.database.db.execute(sql`UPDATE members SET role = 'member' WHERE account_id = ${s.a.accountId} AND user_id = ${admin.user_id}`);
  worker = startWorker(h.deps, { maintenanceIntervalMs: 60_000, webhooks: { accountIds: [] } });
  const job = await eventually(async () => {
    const j = (await request(h.api).get(started.job_url).set(bearer(s.key)).expect(200)).body;
    return j.status === 'succeeded' || j.status === 'failed' ? j : null;
  });
  expect(job).toMatchObject({ status: 'failed', error: { code: 'forbidden' } });
  expect(s.mine()).toHaveLength(1);
});

test('replay failed since stays within the replay limit (60 per hour per endpoint): over it, 429 and nothing is taken or started', async () => {
  const s = await setup();
  const since = new Date(Date.now() - 60_000).toISOString();
  rx.script({ status: 500 }, { status: 500 });
  await s.post('/test').expect(200);
  await s.post('/test').expect(200);
  const key = manualDeliveryKey(h.deps.config, 'replay', s.ep.id);
  await h.deps.redis.set(key, '59', 'EX', 3600);
  const refused = await s.post('/replay-failed', { since }).expect(429);
  expect(refused.body.error).toMatchObject({ code: 'rate_limited', scope: 'webhook_replay_per_hour', limit: 60 });
  expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
  expect(await h.deps.redis.get(key)).toBe('59');
  await s.post('/replay-failed', { since: 'yesterday' }).expect(400);
});

test('stats: attempts per hour by outcome and latency p50/p99 over 24 h and 7 days', async () => {
  const s = await setup();
  rx.script({ status: 500 });
  await s.post('/test').expect(200);
  await s.post('/test').expect(200);
  await s.post('/test').expect(200);
  const day = (await s.get('/stats').expect(200)).body;
  expect(day).toMatchObject({ window: '24h', bucket: 'hour', totals: { attempts: 3, delivered: 2, failed: 1, dead: 0 } });
  expect(day.buckets).toHaveLength(24);
  expect(day.buckets.at(-1)).toMatchObject({ delivered: 2, failed: 1 });
  expect(day.latency_ms.p50).toEqual(expect.any(Number));
  expect(day.latency_ms.p99).toBeGreaterThanOrEqual(day.latency_ms.p50);
  const week = (await s.get('/stats?window=7d').expect(200)).body;
  expect(week.buckets).toHaveLength(168);
  expect(week.totals.attempts).toBe(3);
  await s.get('/stats?window=1y').expect(400);
});

test('a member cannot use these routes (webhooks:manage is an owner or admin scope)', async () => {
  const s = await setup();
  const m = await addPerson(h, s.a.accountId, 'member');
  const web = await signInWeb(h, m.email);
  const r = await web.agent.get(`${s.base}/stats`).expect(403);
  expect(r.body.error).toMatchObject({ code: 'forbidden', reason: 'role' });
});

test('another account cannot see an endpoint through them', async () => {
  const s = await setup();
  const other = await newAccount(h);
  const key = await newKey(h, other.accountId, other.owner.email, ['webhooks:manage']);
  await request(h.api).get(`/accounts/${other.accountId}/webhooks/${s.ep.id}/stats`).set(bearer(key)).expect(404);
});
