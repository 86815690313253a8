import request from 'supertest';
import { eq, webhookBodies, webhookDeliveries } from '@teamchat/db';
import { bearer, newAccount, newKey, signInWeb, type Harness } from '../../../../test/support/harness';
import { startReceiver, type Receiver } from '../../../../test/support/https-receiver';
import { createEndpointRow, deliveriesOf, startWebhookHarness } from '../../../../test/support/webhooks';

/**
 * Spec: Webhook endpoint enablement, "a credential changes the URL … → disabled, awaiting_enable
 * … delivers nothing". A URL set by a credential is unvetted until a person enables it on the
 * dashboard, so neither a test event nor a replay may reach it: otherwise a leaked key could
 * point an endpoint at its own server and replay the log (text-mode bodies, the custom
 * Authorization header) there without anyone approving.
 */
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

async function setup() {
  const a = await newAccount(h);
  const key = await newKey(h, a.accountId, a.owner.email, ['webhooks:manage']);
  const tag = Math.random().toString(36).slice(2, 8);
  const ep = await createEndpointRow(h, {
    accountId: a.accountId, createdByUserId: a.owner.userId, url: rx.url(`/vetted-${tag}`), payload: 'text', authorization: 'receiver-token',
  });
  const base = `/accounts/${a.accountId}/webhooks/${ep.id}`;
  // A logged delivery whose body holds a channel's text (as a text-mode fan-out stores it).
  const first = await request(h.api).post(`${base}/test`).set(bearer(key)).expect(200);
  const [row] = await h.deps.database.db.select().from(webhookDeliveries).where(eq(webhookDeliveries.id, first.body.delivery_id));
  await h.deps.database.db.update(webhookBodies).set({ body: '{"text":"quarterly numbers: confidential"}' }).where(eq(webhookBodies.id, row.bodyId));
  await h.deps.database.db.update(webhookDeliveries).set({ kind: 'event' }).where(eq(webhookDeliveries.id, row.id));
  const evilPath = `/attacker-${tag}`;
  const moved = await request(h.api).patch(base).set(bearer(key)).send({ url: rx.url(evilPath) }).expect(200);
  expect(moved.body).toMatchObject({ enabled: false, disabled_reason: 'awaiting_enable' });
  return { a, key, ep, base, loggedId: row.id, atAttacker: () => rx.received.filter((r) => r.path === evilPath) };
}

describe('an endpoint awaiting enable (URL set by a credential) delivers nothing, test and replay included', () => {
  test('replaying a logged text-mode delivery to the new URL: 403 forbidden awaiting_enable, nothing sent', async () => {
    const s = await setup();
    const res = await request(h.api).post(`${s.base}/deliveries/${s.loggedId}/replay`).set(bearer(s.key));
    expect(res.status).toBe(403);
    expect(res.body.error).toMatchObject({ code: 'forbidden', reason: 'awaiting_enable' });
    expect(s.atAttacker()).toHaveLength(0);
    expect((await deliveriesOf(h, s.ep.id)).filter((r) => r.kind === 'replay')).toHaveLength(0);
  });

  test('a test event to the new URL: 403 forbidden awaiting_enable, nothing sent (the custom header never reaches it)', async () => {
    const s = await setup();
    const res = await request(h.api).post(`${s.base}/test`).set(bearer(s.key));
    expect(res.status).toBe(403);
    expect(res.body.error).toMatchObject({ code: 'forbidden', reason: 'awaiting_enable' });
    expect(s.atAttacker()).toHaveLength(0);
  });

  test('a disabled endpoint whose URL a person vetted (manual) still gets tests and replays', async () => {
    const a = await newAccount(h);
    const key = await newKey(h, a.accountId, a.owner.email, ['webhooks:manage']);
    const path = `/manual-${Math.random().toString(36).slice(2, 8)}`;
    const ep = await createEndpointRow(h, { accountId: a.accountId, createdByUserId: a.owner.userId, url: rx.url(path), enabled: false });
    const base = `/accounts/${a.accountId}/webhooks/${ep.id}`;
    const t = await request(h.api).post(`${base}/test`).set(bearer(key)).expect(200);
    await request(h.api).post(`${base}/deliveries/${t.body.delivery_id}/replay`).set(bearer(key)).expect(200);
    expect(rx.received.filter((r) => r.path === path)).toHaveLength(2);
  });

  test('a credential moving the URL clears the custom Authorization header: once a person enables the new URL, it never receives the old receiver\'s token', async () => {
    const s = await setup();
    const row = await request(h.api).get(s.base).set(bearer(s.key)).expect(200);
    expect(row.body).toMatchObject({ authorization_set: false, disabled_reason: 'awaiting_enable' });
    const { agent, csrf } = await signInWeb(h, s.a.owner.email);
    const enabled = await agent.patch(`/accounts/${s.a.accountId}/webhooks/${s.ep.id}`).set('X-CSRF-Token', csrf).send({ enabled: true });
    expect(enabled.status).toBe(200);
    expect(enabled.body.test_delivery).toMatchObject({ status: 'delivered' });
    const [first] = s.atAttacker();
    expect(first.headers.authorization).toBeUndefined();
  });

  test('a person moving the URL on the dashboard drops the header too, unless the same request sets one (it goes only to the URL it was set for)', async () => {
    const a = await newAccount(h);
    const ep = await createEndpointRow(h, { accountId: a.accountId, createdByUserId: a.owner.userId, url: rx.url('/p1'), authorization: 'keep-me' });
    const { agent, csrf } = await signInWeb(h, a.owner.email);
    const moved = await agent.patch(`/accounts/${a.accountId}/webhooks/${ep.id}`).set('X-CSRF-Token', csrf).send({ url: rx.url('/p2') });
    expect(moved.body).toMatchObject({ enabled: true, authorization_set: false });
    const reset = await agent.patch(`/accounts/${a.accountId}/webhooks/${ep.id}`).set('X-CSRF-Token', csrf).send({ url: rx.url('/p3'), authorization: 'for-p3' });
    expect(reset.body).toMatchObject({ enabled: true, authorization_set: true });
  });
});
