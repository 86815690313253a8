import request from 'supertest';
import Stripe from 'stripe';
import { Webhook } from 'standardwebhooks';
import { eq, webhookDeliveries, webhookEndpoints } from '@teamchat/db';
import { MANUAL_DELIVERY_LIMITS, manualDeliveryKey, nextUtcMidnight, unitsKey } from '@teamchat/core';
import { webhookQueuesFor } from '@teamchat/delivery';
import { addPerson, bearer, newAccount, newKey, type Harness } from '../../../../test/support/harness';
import { startReceiver, type Receiver } from '../../../../test/support/https-receiver';
import { createEndpointRow, deliveriesOf, startWebhookHarness } from '../../../../test/support/webhooks';

/**
 * Spec: Webhooks endpoints test, deliveries, replay; Limits (test events 10/min, replays
 * 60/hour per endpoint); Delivery transitions (test events failed never retried; replay: a new
 * delivery, same event id, the body sent the first time). The API delivers these itself.
 */
const stripe = new Stripe('sk_test_unused');
let h: Harness;
let rx: Receiver;

beforeAll(async () => {
  h = await startWebhookHarness();
  rx = await startReceiver();
});
afterAll(async () => {
  await rx.close();
  await h.close();
});
beforeEach(() => {
  rx.received.length = 0;
  rx.fallback = { status: 200 };
});

/** An account, an owner's key with webhooks:manage, and an endpoint (created by an admin with `byAdmin`). */
async function setup(opts: { enabled?: boolean; byAdmin?: boolean } = {}) {
  const a = await newAccount(h);
  const key = await newKey(h, a.accountId, a.owner.email, ['webhooks:manage']);
  const path = `/t-${Math.random().toString(36).slice(2, 8)}`;
  const creator = opts.byAdmin ? (await addPerson(h, a.accountId, 'admin')).user_id : a.owner.userId;
  const ep = await createEndpointRow(h, { accountId: a.accountId, createdByUserId: creator, url: rx.url(path), enabled: opts.enabled });
  const base = `/accounts/${a.accountId}/webhooks/${ep.id}`;
  return {
    a, ep, key, path, creator,
    spendCreatorUnits: () => h.deps.redis.set(unitsKey(h.deps.config, a.accountId, creator, h.deps.now()), String(h.deps.config.planLimits.pro.unitsPerDay)),
    test: () => request(h.api).post(`${base}/test`).set(bearer(key)),
    list: (q = '') => request(h.api).get(`${base}/deliveries${q}`).set(bearer(key)),
    replay: (id: string) => request(h.api).post(`${base}/deliveries/${id}/replay`).set(bearer(key)),
    mine: () => rx.received.filter((r) => r.path === path),
  };
}

describe('POST .../webhooks/{endpointId}/test (spec: test event; transitions row 4)', () => {
  test('delivers a signed test event now and answers 200 with the result', async () => {
    const s = await setup();
    const res = await s.test().expect(200);
    expect(res.body).toEqual({ delivery_id: expect.stringMatching(/^dlv_/), status: 'delivered', response_status: 200, latency_ms: expect.any(Number), error: null });
    const [req] = s.mine();
    const body = JSON.parse(req.body);
    expect(body).toMatchObject({ id: expect.stringMatching(/^evt_/), type: 'test', account_id: s.a.accountId, created_at: expect.any(String) });
    expect(req.headers['x-service-event']).toBe('test');
    expect(req.headers['x-service-delivery']).toBe(res.body.delivery_id);
    expect(stripe.webhooks.constructEvent(req.body, req.headers['x-service-signature'] as string, s.ep.secret, 300)).toBeTruthy();
    expect(new Webhook(s.ep.secret).verify(req.body, req.headers as Record<string, string>)).toBeTruthy();
  });

  test('a failing test event is failed and never retried; a disabled endpoint still gets its test', async () => {
    const s = await setup({ enabled: false });
    rx.fallback = { status: 500 };
    const res = await s.test().expect(200);
    expect(res.body).toMatchObject({ status: 'failed', response_status: 500, error: 'receiver answered 500' });
    await new Promise((r) => setTimeout(r, 700)); // longer than the retry schedule's first step
    const rows = await deliveriesOf(h, s.ep.id);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ kind: 'test', status: 'failed', nextRetryAt: null });
    expect(s.mine()).toHaveLength(1);
  });

  test('over 10 per minute per endpoint: 429 rate_limited with Retry-After; another endpoint is unaffected', async () => {
    const s = await setup();
    for (let i = 0; i < MANUAL_DELIVERY_LIMITS.test.limit; i++) await s.test().expect(200);
    const res = await s.test().expect(429);
    expect(res.body.error).toMatchObject({ code: 'rate_limited', scope: 'webhook_test_per_minute' });
    expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
    expect(Number(res.headers['retry-after'])).toBeLessThanOrEqual(60);
    expect(s.mine()).toHaveLength(10);
    const other = await setup();
    await other.test().expect(200);
  });

  test('an unknown endpoint is 404; a key without webhooks:manage is refused', async () => {
    const s = await setup();
    await request(h.api).post(`/accounts/${s.a.accountId}/webhooks/whe_nope/test`).set(bearer(s.key)).expect(404);
    const weak = await newKey(h, s.a.accountId, s.a.owner.email, []);
    const res = await request(h.api).post(`/accounts/${s.a.accountId}/webhooks/${s.ep.id}/test`).set(bearer(weak)).expect(403);
    expect(res.body.error.code).toBe('insufficient_scope');
  });

  test('with the creator\'s units spent a test event is failed without being sent (never retried)', async () => {
    const s = await setup({ byAdmin: true });
    await s.spendCreatorUnits();
    const res = await s.test().expect(200);
    expect(res.body).toMatchObject({ status: 'failed', response_status: null, latency_ms: null, error: expect.stringMatching(/^call units spent/) });
    expect(s.mine()).toHaveLength(0);
    expect((await deliveriesOf(h, s.ep.id))[0]).toMatchObject({ status: 'failed', nextRetryAt: null });
  });
});

describe('GET .../deliveries (the delivery log, newest first, cursor-paged)', () => {
  test('entries carry the delivery log\'s fields; pages follow next_cursor; a foreign cursor is invalid_cursor', async () => {
    const s = await setup();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await s.test().expect(200)).body.delivery_id);
    const first = await s.list('?limit=2').expect(200);
    expect(first.body.data.map((d: { id: string }) => d.id)).toEqual([ids[2], ids[1]]);
    expect(first.body.data[0]).toEqual({
      id: ids[2], event_id: expect.stringMatching(/^evt_/), event_type: 'test', kind: 'test', attempt: 1, status: 'delivered',
      next_retry_at: null, response_status: 200, latency_ms: expect.any(Number), error: null, created_at: expect.any(String), attempted_at: expect.any(String),
    });
    const second = await s.list(`?limit=2&cursor=${encodeURIComponent(first.body.next_cursor)}`).expect(200);
    expect(second.body.data.map((d: { id: string }) => d.id)).toEqual([ids[0]]);
    expect(second.body.next_cursor).toBeNull();
    const other = await setup();
    const bad = await other.list(`?cursor=${encodeURIComponent(first.body.next_cursor)}`).expect(400);
    expect(bad.body.error.code).toBe('invalid_cursor');
  });
});

describe('POST .../deliveries/{deliveryId}/replay (spec: transitions "replay"; Delivery behaviour 7)', () => {
  test('replaying a dead delivery sends exactly the first body under the same event id, as a new delivery', async () => {
    const s = await setup();
    rx.fallback = { status: 500 };
    const failed = (await s.test().expect(200)).body;
    // Make it a dead event delivery, as the end of a chain would leave it.
    await h.deps.database.db.update(webhookDeliveries).set({ status: 'dead', kind: 'event' }).where(eq(webhookDeliveries.id, failed.delivery_id));
    // The endpoint's secret and payload mode change meanwhile; the body must not.
    await h.deps.database.db.update(webhookEndpoints).set({ payload: 'text' }).where(eq(webhookEndpoints.id, s.ep.id));
    rx.fallback = { status: 200 };
    const res = await s.replay(failed.delivery_id).expect(200);
    expect(res.body).toMatchObject({ status: 'delivered', response_status: 200, error: null });
    expect(res.body.delivery_id).not.toBe(failed.delivery_id);
    const [orig, again] = s.mine();
    expect(again.body).toBe(orig.body);
    expect(again.headers['webhook-id']).toBe(orig.headers['webhook-id']);
    expect(again.headers['x-service-delivery']).toBe(res.body.delivery_id);
    expect(again.headers['x-service-attempt']).toBe('1');
    const rows = await deliveriesOf(h, s.ep.id);
    expect(rows.find((r) => r.id === res.body.delivery_id)).toMatchObject({ kind: 'replay', status: 'delivered', chainId: res.body.delivery_id, eventId: rows[0].eventId });
    expect(rows.find((r) => r.id === failed.delivery_id)!.status).toBe('dead'); // the log entry replayed is unchanged
  });

  test('a replay that fails is dead (one attempt, never retried); an unknown delivery is 404', async () => {
    const s = await setup();
    const ok = (await s.test().expect(200)).body;
    rx.fallback = { status: 502 };
    const res = await s.replay(ok.delivery_id).expect(200);
    expect(res.body).toMatchObject({ status: 'dead', response_status: 502 });
    await s.replay('dlv_nope').expect(404);
  });

  test('with the creator\'s units spent a replay waits as retrying until the reset (nothing dropped)', async () => {
    const s = await setup({ byAdmin: true });
    const ok = (await s.test().expect(200)).body;
    await s.spendCreatorUnits();
    const res = await s.replay(ok.delivery_id).expect(200);
    expect(res.body).toMatchObject({ status: 'retrying', response_status: null, next_retry_at: nextUtcMidnight(h.deps.now()).toISOString() });
    const row = (await deliveriesOf(h, s.ep.id)).find((r) => r.id === res.body.delivery_id)!;
    expect(row).toMatchObject({ status: 'retrying', kind: 'replay' });
    expect(s.mine()).toHaveLength(1);
    // Handed to the worker for the reset.
    const job = await webhookQueuesFor(h.deps).delivery.getJob(res.body.delivery_id);
    expect(await job?.isDelayed()).toBe(true);
  });

  test('over 60 per hour per endpoint: 429 rate_limited with Retry-After', async () => {
    const s = await setup();
    const ok = (await s.test().expect(200)).body;
    await h.deps.redis.set(manualDeliveryKey(h.deps.config, 'replay', s.ep.id), String(MANUAL_DELIVERY_LIMITS.replay.limit), 'EX', 3000);
    const res = await s.replay(ok.delivery_id).expect(429);
    expect(res.body.error).toMatchObject({ code: 'rate_limited', scope: 'webhook_replay_per_hour' });
    expect(Number(res.headers['retry-after'])).toBeGreaterThan(60);
    expect(s.mine()).toHaveLength(1);
  });
});
