import { createHmac } from 'node:crypto';
import Stripe from 'stripe';
import { Webhook } from 'standardwebhooks';
import { eq, webhookBodies, webhookDeliveries, webhookEndpoints } from '@teamchat/db';
import { generateSigningSecret, nextUtcMidnight, recordEvent, sealWebhookSecret, setAccountState, unitsKey } from '@teamchat/core';
import { webhookQueuesFor } from '../src';
import { startDeliveryEngine, type DeliveryEngine } from '../src';
import { addPerson, type Harness } from '../../../test/support/harness';
import { startReceiver, type Receiver } from '../../../test/support/https-receiver';
import { addToChannel, makeChannel, memberCaller, messagingAccount, post, type MessagingAccount } from '../../../test/support/messaging';
import {
  TEST_RETRY_SCHEDULE_MS, createEndpointRow, deliveriesOf, endpointRow, eventually, startWebhookHarness,
} from '../../../test/support/webhooks';

/**
 * Spec: Webhook delivery status and Delivery transitions, Delivery headers, Signature, Delivery
 * behaviour; docs/webhooks.md "The delivery engine". Real HTTPS receiver (throwaway CA), real
 * PostgreSQL, Redis and BullMQ; the worker runs in this process, scoped to this file's accounts.
 */
const stripe = new Stripe('sk_test_unused');
let h: Harness;
let rx: Receiver;
let worker: DeliveryEngine;
const accountIds: string[] = [];

beforeAll(async () => {
  h = await startWebhookHarness();
  rx = await startReceiver();
  worker = startDeliveryEngine(h.deps, { accountIds, maintenanceIntervalMs: 300 });
});
afterAll(async () => {
  await worker.close();
  await rx.close();
  await h.close();
});
beforeEach(() => {
  rx.received.length = 0;
  rx.fallback = { status: 200 };
});

async function setup(opts: Partial<Parameters<typeof createEndpointRow>[1]> = {}) {
  const a: MessagingAccount = await messagingAccount(h);
  accountIds.push(a.accountId);
  const ch = await makeChannel(a.ownerApi);
  const path = `/hook-${Math.random().toString(36).slice(2, 8)}`;
  const ep = await createEndpointRow(h, { accountId: a.accountId, createdByUserId: a.owner.userId, url: rx.url(path), ...opts });
  return { a, ch, ep, path, mine: () => rx.received.filter((r) => r.path === path) };
}

const chainOf = async (endpointId: string) => deliveriesOf(h, endpointId);

/** An open retry row of an earlier event, waiting an hour: what disabling must drop. */
async function openRetryRow(accountId: string, endpointId: string): Promise<string> {
  const [body] = await h.deps.database.db.select().from(webhookBodies).limit(1);
  const id = `dlv_open${Math.random().toString(36).slice(2, 14)}`;
  await h.deps.database.db.insert(webhookDeliveries).values({
    id, accountId, endpointId, eventId: body.eventId, eventType: body.eventType, bodyId: body.id, kind: 'event', chainId: id,
    attempt: 2, status: 'retrying', nextRetryAt: new Date(Date.now() + 3600_000), eventCreatedAt: new Date(),
  });
  return id;
}
const rowById = async (id: string) => (await h.deps.database.db.select().from(webhookDeliveries).where(eq(webhookDeliveries.id, id)))[0];

describe('pending → delivered (spec: Delivery transitions row 1; Delivery headers; Signature)', () => {
  test('a post reaches the receiver once, signed both ways over the raw body, with every header', async () => {
    const { a, ch, ep, mine } = await setup({ authorization: 'tok-123' });
    await post(a.ownerApi, ch, { text: 'hello webhooks' });
    const [req] = await eventually(async () => (mine().length >= 1 ? mine() : null), 15_000, 'the delivery');
    const rows = await eventually(async () => {
      const r = await chainOf(ep.id);
      return r.length === 1 && r[0].status === 'delivered' ? r : null;
    });
    const row = rows[0];
    const body = JSON.parse(req.body);
    expect(body).toMatchObject({ id: row.eventId, type: 'message.posted', account_id: a.accountId });
    expect(body.text).toBeUndefined(); // pointers mode never carries text
    const [stored] = await h.deps.database.db.select().from(webhookBodies).where(eq(webhookBodies.id, row.bodyId));
    expect(req.body).toBe(stored.body);
    expect(req.headers['content-type']).toBe('application/json');
    expect(req.headers['x-service-event']).toBe('message.posted');
    expect(req.headers['x-service-delivery']).toBe(row.id);
    expect(req.headers['x-service-attempt']).toBe('1');
    expect(req.headers.authorization).toBe('Bearer tok-123');
    expect(req.headers['webhook-id']).toBe(row.eventId);
    expect(req.headers['x-service-signature']).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    expect(stripe.webhooks.constructEvent(req.body, req.headers['x-service-signature'] as string, ep.secret, 300)).toMatchObject({ id: row.eventId });
    expect(new Webhook(ep.secret).verify(req.body, req.headers as Record<string, string>)).toMatchObject({ id: row.eventId });
    expect(row).toMatchObject({ kind: 'event', attempt: 1, chainId: row.id, responseStatus: 200, error: null, nextRetryAt: null });
    expect(row.latencyMs).toEqual(expect.any(Number));
    expect((await endpointRow(h, ep.id)).lastSuccessAt).toBeInstanceOf(Date);
    // Each stage of the delivery was timed (teamchat_webhook_stage_seconds).
    const stages = (await h.deps.metrics.deliveryStageSeconds.get()).values.filter((v) => v.metricName?.endsWith('_count') && v.value > 0).map((v) => v.labels.stage);
    expect(new Set(stages)).toEqual(new Set(['relay', 'fan_out', 'dispatch', 'answer', 'record']));
  });

  test('during rotation two v1 signatures, current first: each secret verifies with stripe and standardwebhooks', async () => {
    const previous = generateSigningSecret();
    const { a, ch, ep, mine } = await setup({ previousSecret: previous, previousValidUntil: new Date(Date.now() + 3600_000) });
    await post(a.ownerApi, ch, { text: 'rotating' });
    const [req] = await eventually(async () => (mine().length >= 1 ? mine() : null));
    expect((req.headers['x-service-signature'] as string).split(',')).toHaveLength(3);
    for (const secret of [ep.secret, previous]) {
      expect(stripe.webhooks.constructEvent(req.body, req.headers['x-service-signature'] as string, secret, 300)).toBeTruthy();
      expect(new Webhook(secret).verify(req.body, req.headers as Record<string, string>)).toBeTruthy();
    }
    expect(() => new Webhook(generateSigningSecret()).verify(req.body, req.headers as Record<string, string>)).toThrow();
  });

  test('a rotation signs the next delivery with the new secret first, in a worker that already signed with the old one', async () => {
    const { a, ch, ep, mine } = await setup();
    await post(a.ownerApi, ch, { text: 'before the rotation' });
    const [before] = await eventually(async () => (mine().length >= 1 ? mine() : null));
    expect((before.headers['x-service-signature'] as string).split(',')).toHaveLength(2);
    const rotated = generateSigningSecret();
    await h.deps.database.db.update(webhookEndpoints).set({
      secretEnc: sealWebhookSecret(h.deps.config, rotated),
      previousSecretEnc: sealWebhookSecret(h.deps.config, ep.secret),
      previousValidUntil: new Date(Date.now() + 3600_000),
    }).where(eq(webhookEndpoints.id, ep.id));
    await post(a.ownerApi, ch, { text: 'after the rotation' });
    const [, after] = await eventually(async () => (mine().length >= 2 ? mine() : null));
    const header = after.headers['x-service-signature'] as string;
    expect(header.split(',')).toHaveLength(3);
    // The first v1 is the new secret's; each secret verifies on its own.
    const [t, first] = header.split(',').map((part) => part.split('=').slice(1).join('='));
    expect(first).toBe(createHmac('sha256', rotated).update(`${t}.${after.body}`).digest('hex'));
    expect(stripe.webhooks.constructEvent(after.body, header, rotated, 300)).toBeTruthy();
    expect(new Webhook(rotated).verify(after.body, after.headers as Record<string, string>)).toBeTruthy();
    expect(stripe.webhooks.constructEvent(after.body, header, ep.secret, 300)).toBeTruthy();
  });

  test('an expired previous secret no longer signs', async () => {
    const { a, ch, mine } = await setup({ previousSecret: generateSigningSecret(), previousValidUntil: new Date(Date.now() - 1000) });
    await post(a.ownerApi, ch, { text: 'after overlap' });
    const [req] = await eventually(async () => (mine().length >= 1 ? mine() : null));
    expect((req.headers['x-service-signature'] as string).split(',')).toHaveLength(2);
  });
});

describe('failed, retrying, dead (spec: Delivery transitions rows 2 and 3; Delivery behaviour 2)', () => {
  test('a failure makes the row failed and schedules the next attempt as retrying; a later 2xx is delivered', async () => {
    const { a, ch, ep, mine } = await setup();
    rx.script({ status: 500 });
    // Route the scripted 500 to this endpoint: nothing else posts meanwhile in this file.
    await post(a.ownerApi, ch, { text: 'flaky' });
    const rows = await eventually(async () => {
      const r = await chainOf(ep.id);
      return r.length === 2 && r[1].status === 'delivered' ? r : null;
    });
    expect(rows[0]).toMatchObject({ status: 'failed', attempt: 1, responseStatus: 500, error: 'receiver answered 500', nextRetryAt: null });
    expect(rows[1]).toMatchObject({ status: 'delivered', attempt: 2, chainId: rows[0].id, eventId: rows[0].eventId, bodyId: rows[0].bodyId });
    const got = mine();
    expect(got).toHaveLength(2);
    expect(got[0].body).toBe(got[1].body); // every retry sends exactly the stored bytes
    expect(got.map((r) => r.headers['x-service-attempt'])).toEqual(['1', '2']);
    expect(got[0].headers['x-service-delivery']).not.toBe(got[1].headers['x-service-delivery']);
    expect(got[0].headers['webhook-id']).toBe(got[1].headers['webhook-id']);
  });

  test('the retry row waits as retrying with next_retry_at one schedule step after the failure', async () => {
    const { a, ch, ep } = await setup();
    rx.fallback = { status: 503 };
    await post(a.ownerApi, ch, { text: 'watch the retry' });
    const retrying = await eventually(async () => {
      const r = await chainOf(ep.id);
      return r.find((x) => x.status === 'retrying') ?? null;
    }, 10_000, 'a retrying row');
    const [first] = await chainOf(ep.id);
    expect(first.status).toBe('failed');
    expect(retrying.nextRetryAt!.getTime() - first.attemptedAt!.getTime()).toBe(TEST_RETRY_SCHEDULE_MS[0]);
    await eventually(async () => (await chainOf(ep.id)).some((x) => x.status === 'dead'), 15_000, 'dead');
  });

  test('every scheduled retry failing ends dead: one row per attempt, no further attempts', async () => {
    const { a, ch, ep, mine } = await setup();
    rx.fallback = { status: 500 };
    await post(a.ownerApi, ch, { text: 'always failing' });
    const attempts = TEST_RETRY_SCHEDULE_MS.length + 1;
    const rows = await eventually(async () => {
      const r = await chainOf(ep.id);
      return r.length === attempts && r[attempts - 1].status === 'dead' ? r : null;
    }, 20_000, 'the chain to die');
    expect(rows.map((r) => r.status)).toEqual([...TEST_RETRY_SCHEDULE_MS.map(() => 'failed'), 'dead']);
    expect(rows.map((r) => r.attempt)).toEqual([1, 2, 3, 4]);
    expect(new Set(rows.map((r) => r.chainId)).size).toBe(1);
    await new Promise((r) => setTimeout(r, 800));
    expect(mine()).toHaveLength(attempts);
    expect(await chainOf(ep.id)).toHaveLength(attempts);
  });

  test('a redirect is a failure and is never followed; a timeout is a failure', async () => {
    const { a, ch, ep, mine } = await setup();
    rx.script({ redirect: rx.url('/elsewhere') }, { hang: true });
    await post(a.ownerApi, ch, { text: 'redirect me' });
    const rows = await eventually(async () => {
      const r = await chainOf(ep.id);
      return r.length === 3 && r[2].status === 'delivered' ? r : null;
    }, 20_000, 'redirect, timeout, success');
    expect(rows[0]).toMatchObject({ status: 'failed', responseStatus: 302, error: 'redirect (302) not followed' });
    expect(rows[1]).toMatchObject({ status: 'failed', responseStatus: null, error: expect.stringMatching(/^timeout/) });
    expect(rx.received.filter((r) => r.path === '/elsewhere')).toHaveLength(0);
    expect(mine()).toHaveLength(3);
  });
});

describe('automatic disabling (spec: Webhook endpoint enablement: gone, failing, slow)', () => {
  test('410 Gone disables the endpoint (gone) and ends the chain dead', async () => {
    const { a, ch, ep } = await setup();
    rx.fallback = { status: 410 };
    await post(a.ownerApi, ch, { text: 'gone' });
    const rows = await eventually(async () => {
      const r = await chainOf(ep.id);
      return r[0]?.status === 'dead' ? r : null;
    });
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ responseStatus: 410, error: 'gone (410)' });
    expect(await endpointRow(h, ep.id)).toMatchObject({ enabled: false, disabledReason: 'gone' });
    // Events raised while disabled are never sent to it.
    await post(a.ownerApi, ch, { text: 'after gone' });
    await new Promise((r) => setTimeout(r, 600));
    expect(await chainOf(ep.id)).toHaveLength(1);
  });

  test('every delivery failed for 24 h: disabled failing, pending retries dropped', async () => {
    const { a, ch, ep } = await setup();
    await h.deps.database.db.update(webhookEndpoints).set({ failingSince: new Date(Date.now() - 25 * 3600_000) }).where(eq(webhookEndpoints.id, ep.id));
    const waiting = await openRetryRow(a.accountId, ep.id);
    rx.fallback = { status: 500 };
    await post(a.ownerApi, ch, { text: 'still failing' });
    const rows = await eventually(async () => {
      const r = (await chainOf(ep.id)).filter((x) => x.id !== waiting);
      return r[0]?.status === 'dead' ? r : null;
    });
    expect(rows.filter((r) => r.id !== waiting)).toHaveLength(1); // no retry scheduled
    expect(await endpointRow(h, ep.id)).toMatchObject({ enabled: false, disabledReason: 'failing' });
    expect(await rowById(waiting)).toMatchObject({ status: 'dead', nextRetryAt: null, error: 'dropped: endpoint disabled (failing)' });
  });

  test('a success clears failing_since; a failure sets it once', async () => {
    const { a, ch, ep } = await setup();
    rx.script({ status: 500 });
    await post(a.ownerApi, ch, { text: 'fail then ok' });
    await eventually(async () => (await chainOf(ep.id)).some((r) => r.status === 'delivered'));
    const row = await endpointRow(h, ep.id);
    expect(row.failingSince).toBeNull();
    expect(row.lastFailureAt).toBeInstanceOf(Date);
    expect(row.lastSuccessAt).toBeInstanceOf(Date);
  });

  test('median latency of the last 50 attempts above 2 s: disabled slow, open deliveries dropped', async () => {
    const { a, ch, ep } = await setup();
    const [first] = await h.deps.database.db.select().from(webhookBodies).limit(1);
    // 49 earlier slow attempts in the log, then one more slow live attempt.
    await h.deps.database.db.insert(webhookDeliveries).values(Array.from({ length: 49 }, (_, i) => ({
      id: `dlv_slowseed${i}${ep.id.slice(4, 14)}`, accountId: a.accountId, endpointId: ep.id, eventId: `evt_seed${i}`, eventType: 'message.posted',
      bodyId: first.id, kind: 'replay', chainId: `dlv_slowseed${i}`, attempt: 1, status: 'delivered', latencyMs: 2400, eventCreatedAt: new Date(),
    })));
    const waiting = await openRetryRow(a.accountId, ep.id);
    rx.fallback = { status: 200, delayMs: 2100 };
    await post(a.ownerApi, ch, { text: 'slow' });
    await eventually(async () => (await endpointRow(h, ep.id)).disabledReason === 'slow', 15_000, 'slow');
    expect((await endpointRow(h, ep.id)).enabled).toBe(false);
    expect(await rowById(waiting)).toMatchObject({ status: 'dead', error: 'dropped: endpoint disabled (slow)' });
  });
});

describe('fan-out (one delivery per matching enabled endpoint; never before enabled_at)', () => {
  test('one delivery per matching endpoint, filtered by events and channels; each event id once', async () => {
    const { a, ch, ep } = await setup({ events: ['message.posted'] });
    const other = await makeChannel(a.ownerApi);
    const onlyOther = await createEndpointRow(h, { accountId: a.accountId, createdByUserId: a.owner.userId, url: rx.url('/other'), channels: [other] });
    const textMode = await createEndpointRow(h, { accountId: a.accountId, createdByUserId: a.owner.userId, url: rx.url('/text'), payload: 'text', events: ['message.posted'] });
    const disabled = await createEndpointRow(h, { accountId: a.accountId, createdByUserId: a.owner.userId, url: rx.url('/off'), enabled: false });
    const later = await createEndpointRow(h, { accountId: a.accountId, createdByUserId: a.owner.userId, url: rx.url('/later'), enabledAt: new Date(Date.now() + 3600_000) });
    await post(a.ownerApi, ch, { text: 'fan me out <!channel>' });
    await eventually(async () => (await chainOf(ep.id))[0]?.status === 'delivered' && (await chainOf(textMode.id))[0]?.status === 'delivered');
    expect(await chainOf(ep.id)).toHaveLength(1); // message.posted only, not the mention
    expect(await chainOf(onlyOther.id)).toHaveLength(0);
    expect(await chainOf(disabled.id)).toHaveLength(0);
    expect(await chainOf(later.id)).toHaveLength(0);
    const textReq = rx.received.find((r) => r.path === '/text')!;
    expect(JSON.parse(textReq.body)).toMatchObject({ type: 'message.posted', text: 'fan me out <!channel>' });
  });

  test('text mode carries text only from channels the endpoint\'s creator can read; elsewhere the pointers body (no text)', async () => {
    const { a, ch } = await setup({ events: ['message.posted'] });
    const admin = await addPerson(h, a.accountId, 'admin');
    const path = `/text-admin-${Math.random().toString(36).slice(2, 8)}`;
    await createEndpointRow(h, { accountId: a.accountId, createdByUserId: admin.user_id, url: rx.url(path), payload: 'text', events: ['message.posted'] });
    await post(a.ownerApi, ch, { text: 'not for the admin' });
    // Membership is checked when the event fans out: let the first one go out before the admin joins.
    await eventually(async () => rx.received.filter((r) => r.path === path).length === 1, 10_000, 'the first delivery');
    await addToChannel(a.ownerApi, ch, admin.identity_id);
    await post(a.ownerApi, ch, { text: 'now readable' });
    await eventually(async () => rx.received.filter((r) => r.path === path).length === 2, 10_000, 'both deliveries');
    const bodies = rx.received.filter((r) => r.path === path).map((r) => JSON.parse(r.body));
    const hidden = bodies.find((b) => b.text === undefined);
    expect(hidden).toMatchObject({ type: 'message.posted' });
    expect(JSON.stringify(hidden)).not.toContain('not for the admin');
    expect(bodies.find((b) => b.text !== undefined)).toMatchObject({ text: 'now readable' });
  });
});

describe('DM rule (spec: Events rule 2; docs/webhooks.md Delivery: direct messages)', () => {
  test('every event in a DM reaches only all-channels endpoints, even one whose list names the DM (docs/webhooks.md: Event bodies, DMs)', async () => {
    const { a, ep: all } = await setup();
    const bob = await memberCaller(h, a.accountId);
    const dm = (await a.ownerApi.post('/dms', { members: [bob.identityId] }).expect(201)).body.id as string;
    const listed = await createEndpointRow(h, { accountId: a.accountId, createdByUserId: a.owner.userId, url: rx.url('/listed'), channels: [dm] });
    const m = await post(a.ownerApi, dm, { text: 'psst' });
    await a.ownerApi.put(`/channels/${dm}/messages/${m.ts}/reactions/eyes`);
    await a.ownerApi.patch(`/channels/${dm}/messages/${m.ts}`, { text: 'psst (edited)' });
    const types = async (id: string) => (await chainOf(id)).map((r) => r.eventType).sort();
    await eventually(async () => (await types(all.id)).length >= 4, 10_000, 'all-channels deliveries');
    await new Promise((r) => setTimeout(r, 500));
    expect(await types(all.id)).toEqual(['dm.received', 'message.edited', 'message.posted', 'reaction.added']);
    expect(await types(listed.id)).toEqual([]);
  });
});

describe('call units (spec: Delivery behaviour 4; transitions "seat\'s daily call units spent")', () => {
  test('with the creator\'s units spent the delivery waits as retrying until the reset, then goes out', async () => {
    const { a, ch, ep, mine } = await setup();
    const poster = await memberCaller(h, a.accountId);
    await addToChannel(a.ownerApi, ch, poster.identityId);
    const now = h.deps.now();
    // The endpoint's creator (the owner) has spent the day's units; the poster has their own seat.
    await h.deps.redis.set(unitsKey(h.deps.config, a.accountId, a.owner.userId, now), String(h.deps.config.planLimits.pro.unitsPerDay));
    await post(poster, ch, { text: 'no units on the creator\'s seat' });
    const rows = await eventually(async () => {
      const r = await chainOf(ep.id);
      return r[0]?.status === 'retrying' ? r : null;
    }, 10_000, 'retrying');
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ attempt: 1, responseStatus: null, attemptedAt: null });
    expect(rows[0].nextRetryAt!.toISOString()).toBe(nextUtcMidnight(now).toISOString());
    expect(mine()).toHaveLength(0);
    // The next UTC day (past the sweep's grace): the sweep finds the row due, promotes its delayed job, and it goes out.
    h.clock.set(new Date(nextUtcMidnight(now).getTime() + 15_000));
    try {
      await worker.maintain();
      await eventually(async () => (await chainOf(ep.id))[0]?.status === 'delivered', 10_000, 'delivered after the reset');
      expect(mine()).toHaveLength(1);
      expect(await chainOf(ep.id)).toHaveLength(1);
    } finally {
      h.clock.reset();
    }
  });
});

describe('account states (docs/webhooks.md: deliveries wait while read-only or suspended)', () => {
  test('a suspended account\'s deliveries wait; nothing is dropped, they go out once it is active', async () => {
    const { a, ch, ep, mine } = await setup();
    await h.deps.database.db.transaction((tx) => setAccountState(tx, a.accountId, 'suspended'));
    // An event committed while suspended (written by core directly: the API refuses the account's routes).
    await h.deps.database.db.transaction((tx) => recordEvent(tx, { type: 'message.posted', accountId: a.accountId, data: { channel: { id: ch, kind: 'channel' }, ts: '1.000001', author: a.owner.identityId, thread_ts: null, session: null, links_count: 0, attachments_count: 0, mentions: [], broadcast: false, content: { text: 'while suspended', links: [] } } }));
    const rows = await eventually(async () => {
      const r = await chainOf(ep.id);
      return r.length === 1 ? r : null;
    });
    await new Promise((r) => setTimeout(r, 500));
    expect((await chainOf(ep.id))[0].status).toBe('pending');
    expect(mine()).toHaveLength(0);
    // The pipeline claimed it to read it; a row that waits gives its claim back (nothing holds it meanwhile).
    expect((await rowById(rows[0].id)).claimedUntil).toBeNull();
    await h.deps.database.db.transaction((tx) => setAccountState(tx, a.accountId, 'active'));
    // The row's wake-up job looks again after a minute; promote it as the sweep does for a row overdue by its grace.
    const wakeUp = await eventually(async () => (await webhookQueuesFor(h.deps).delivery.getDelayed()).find((j) => j.data.deliveryId === rows[0].id), 5_000, 'the wake-up job');
    await wakeUp.promote();
    await eventually(async () => (await chainOf(ep.id))[0]?.status === 'delivered', 10_000);
    expect(mine()).toHaveLength(1);
  });
});
