import { eq, webhookEndpoints } from '@teamchat/db';
import { startDeliveryEngine, type DeliveryEngine } from '../src';
import { signInWeb, type Harness } from '../../../test/support/harness';
import { startReceiver, type Receiver } from '../../../test/support/https-receiver';
import { makeChannel, messagingAccount, post } from '../../../test/support/messaging';
import { createEndpointRow, deliveriesOf, endpointRow, eventually, startWebhookHarness } from '../../../test/support/webhooks';

/**
 * Spec: Webhook endpoint enablement (enabling: "a test event is delivered first, then delivery
 * resumes"); docs/webhooks.md "Enabling delivers a test event first". Real HTTPS receiver, real
 * PostgreSQL, Redis and BullMQ; the engine runs in this process, scoped to this file's accounts.
 */
let h: Harness;
let rx: Receiver;
let engine: DeliveryEngine;
const accountIds: string[] = [];

beforeAll(async () => {
  h = await startWebhookHarness();
  rx = await startReceiver();
  engine = startDeliveryEngine(h.deps, { accountIds, maintenanceIntervalMs: 300 });
});
afterAll(async () => {
  await engine.close();
  await rx.close();
  await h.close();
});

async function setup(enabled: boolean) {
  const a = await messagingAccount(h);
  accountIds.push(a.accountId);
  const ch = await makeChannel(a.ownerApi);
  const path = `/hook-${Math.random().toString(36).slice(2, 8)}`;
  const ep = await createEndpointRow(h, { accountId: a.accountId, createdByUserId: a.owner.userId, url: rx.url(path), events: ['message.posted'], enabled });
  return { a, ch, ep, mine: () => rx.received.filter((r) => r.path === path) };
}

describe('enabling delivers its test event first (spec: Webhook endpoint enablement)', () => {
  test('events posted while the test is under way reach the receiver only after the test is answered, then at once', async () => {
    const { a, ch, ep, mine } = await setup(false);
    const { agent, csrf } = await signInWeb(h, a.owner.email);
    // The receiver answers the enable's test slowly: without the hold, the posts below would
    // arrive while it is still open.
    const TEST_ANSWER_MS = 1500;
    rx.script({ status: 200, delayMs: TEST_ANSWER_MS });
    const enabling = agent.patch(`/accounts/${a.accountId}/webhooks/${ep.id}`).set('X-CSRF-Token', csrf).send({ enabled: true }).then((r) => r);
    const test = await eventually(async () => mine()[0], 10_000, 'the enable test to arrive');
    expect(test.headers['x-service-event']).toBe('test');
    expect((await endpointRow(h, ep.id)).enableTestUntil).not.toBeNull();
    for (let i = 0; i < 3; i += 1) await post(a.ownerApi, ch, { text: `during the test ${i}` });

    const res = await enabling;
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ enabled: true, test_delivery: { status: 'delivered', response_status: 200 } });
    const events = await eventually(async () => (mine().length === 4 ? mine().slice(1) : null), 15_000, 'the three posts');
    for (const e of events) {
      expect(e.headers['x-service-event']).toBe('message.posted');
      // Arrival is stamped when the request's body has been read: the test's answer went out
      // TEST_ANSWER_MS after that (a few ms of timer slack allowed).
      expect(e.at).toBeGreaterThanOrEqual(test.at + TEST_ANSWER_MS - 20);
    }
    // The hold is lifted once the test is recorded, and the deliveries went at once (woken), not
    // when the hold would have lapsed (the test timeout and a claim's time: over 5 s here).
    expect((await endpointRow(h, ep.id)).enableTestUntil).toBeNull();
    expect(Math.max(...events.map((e) => e.at)) - test.at).toBeLessThan(TEST_ANSWER_MS + 4000);
    // Each answer is recorded after it reached the receiver (a close gathers for a few ms).
    await eventually(async () => {
      const statuses = (await deliveriesOf(h, ep.id)).filter((r) => r.kind === 'event').map((r) => r.status);
      return statuses.join() === 'delivered,delivered,delivered';
    }, 10_000, 'the three deliveries recorded delivered');
  });

  test('a hold nobody lifts (the enabling request died) lapses at its time; other endpoints of the account are not held', async () => {
    const { a, ch, ep, mine } = await setup(true);
    await createEndpointRow(h, { accountId: a.accountId, createdByUserId: a.owner.userId, url: rx.url(`/other-${ep.id}`), events: ['message.posted'] });
    const HOLD_MS = 3000;
    const holdUntil = new Date(Date.now() + HOLD_MS);
    await h.deps.database.db.update(webhookEndpoints).set({ enableTestUntil: holdUntil }).where(eq(webhookEndpoints.id, ep.id));

    await post(a.ownerApi, ch, { text: 'held until the hold lapses' });
    const [first] = await eventually(async () => (mine().length >= 1 ? mine() : null), 15_000, 'the held delivery');
    expect(first.at).toBeGreaterThanOrEqual(holdUntil.getTime() - 20);
    // The other endpoint of the account was never held.
    const otherRx = await eventually(async () => rx.received.find((r) => r.path === `/other-${ep.id}`), 15_000, 'the other endpoint');
    expect(otherRx.at).toBeLessThan(holdUntil.getTime());
  });

  test('a hold keeps back event deliveries only: a replay and a test event to the held endpoint are sent at once', async () => {
    const { a, ch, ep, mine } = await setup(true);
    await post(a.ownerApi, ch, { text: 'delivered before the hold' });
    await eventually(async () => mine()[0], 15_000, 'the first delivery');
    const logged = await eventually(async () => (await deliveriesOf(h, ep.id)).find((r) => r.kind === 'event' && r.status === 'delivered'), 10_000, 'the first delivery recorded');
    const holdUntil = new Date(Date.now() + 20_000);
    await h.deps.database.db.update(webhookEndpoints).set({ enableTestUntil: holdUntil }).where(eq(webhookEndpoints.id, ep.id));
    const { agent, csrf } = await signInWeb(h, a.owner.email);

    const replayed = await agent.post(`/accounts/${a.accountId}/webhooks/${ep.id}/deliveries/${logged.id}/replay`).set('X-CSRF-Token', csrf).send({});
    expect(replayed.status).toBe(200);
    expect(replayed.body).toMatchObject({ status: 'delivered', response_status: 200 });
    const tested = await agent.post(`/accounts/${a.accountId}/webhooks/${ep.id}/test`).set('X-CSRF-Token', csrf).send({});
    expect(tested.status).toBe(200);
    expect(tested.body).toMatchObject({ status: 'delivered', response_status: 200 });
    expect(mine().map((r) => r.headers['x-service-event'])).toEqual(['message.posted', 'message.posted', 'test']);
    // The hold still stands: it was not what these two waited on.
    expect((await endpointRow(h, ep.id)).enableTestUntil).toEqual(holdUntil);
  });
});
