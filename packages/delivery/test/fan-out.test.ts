import { eq, events } from '@teamchat/db';
import { fanOutEvent, loadDeliveryContexts, planFanOut, writeFanOut } from '../src';
import { createMigratedDatabase, dropDatabase } from '../../../test/support/databases';
import type { Harness } from '../../../test/support/harness';
import { makeChannel, messagingAccount, post, eventsOf } from '../../../test/support/messaging';
import { createEndpointRow, deliveriesOf, startWebhookHarness } from '../../../test/support/webhooks';

/**
 * Relay and fan-out (docs/webhooks.md "The delivery engine"): a row relayed twice never fans out twice. Fan-out is one read and
 * one write statement (no transaction): the write marks the event relayed and inserts the
 * bodies and deliveries only if it was this call that marked it. No worker runs in this file;
 * fan-out is called directly, several times at once.
 */
// A database of its own: another file's worker relays every account's events in the run's database.
let db: { name: string; url: string };
let h: Harness;
beforeAll(async () => {
  db = await createMigratedDatabase('teamchat_whfanout');
  h = await startWebhookHarness({ databaseUrl: db.url });
});
afterAll(async () => {
  await h.close();
  await dropDatabase(db.name);
});

test('the same event fanned out by several callers at once: one delivery per endpoint, one body per mode, relayed once', async () => {
  const a = await messagingAccount(h);
  const ch = await makeChannel(a.ownerApi);
  const pointers = await createEndpointRow(h, { accountId: a.accountId, createdByUserId: a.owner.userId, url: 'https://localhost:1/p', events: ['message.posted'] });
  const text = await createEndpointRow(h, { accountId: a.accountId, createdByUserId: a.owner.userId, url: 'https://localhost:1/t', events: ['message.posted'], payload: 'text' });
  const other = await createEndpointRow(h, { accountId: a.accountId, createdByUserId: a.owner.userId, url: 'https://localhost:1/o', events: ['reaction.added'] });
  await post(a.ownerApi, ch, { text: 'fan me out once' });
  const [event] = (await eventsOf(h, a.accountId)).filter((e) => e.type === 'message.posted');
  expect(event.relayedAt).toBeNull();

  const results = await Promise.all(Array.from({ length: 6 }, () => fanOutEvent(h.deps, event.id)));
  expect(results.flat()).toHaveLength(2); // one caller wrote both rows; the others wrote nothing
  expect(results.filter((r) => r.length > 0)).toHaveLength(1);

  const p = await deliveriesOf(h, pointers.id);
  const t = await deliveriesOf(h, text.id);
  expect(p).toHaveLength(1);
  expect(t).toHaveLength(1);
  expect(await deliveriesOf(h, other.id)).toHaveLength(0); // events filter
  expect(p[0]).toMatchObject({ status: 'pending', attempt: 1, kind: 'event', eventId: event.id, chainId: p[0].id });
  expect(p[0].bodyId).not.toBe(t[0].bodyId); // pointers and text bodies, each stored once
  const [relayed] = await h.deps.database.db.select().from(events).where(eq(events.id, event.id));
  expect(relayed.relayedAt).toBeInstanceOf(Date);
  expect(p[0].eventCreatedAt.getTime()).toBe(relayed.createdAt.getTime());

  // Relayed: a later fan-out of the same event writes nothing.
  expect(await fanOutEvent(h.deps, event.id)).toEqual([]);
  expect(await deliveriesOf(h, pointers.id)).toHaveLength(1);
});

test('an event no endpoint matches is marked relayed and gets no delivery', async () => {
  const a = await messagingAccount(h);
  const ch = await makeChannel(a.ownerApi);
  await post(a.ownerApi, ch, { text: 'nobody listens' });
  const [event] = await eventsOf(h, a.accountId);
  expect(await fanOutEvent(h.deps, event.id)).toEqual([]);
  const [row] = await h.deps.database.db.select().from(events).where(eq(events.id, event.id));
  expect(row.relayedAt).toBeInstanceOf(Date);
});

/** An account with two endpoints of message.posted and one post: the post's fan-out planned (one row per endpoint), not written. */
async function twoEndpointsPlanned() {
  const a = await messagingAccount(h);
  const ch = await makeChannel(a.ownerApi);
  const one = await createEndpointRow(h, { accountId: a.accountId, createdByUserId: a.owner.userId, url: 'https://localhost:1/one', events: ['message.posted'] });
  const two = await createEndpointRow(h, { accountId: a.accountId, createdByUserId: a.owner.userId, url: 'https://localhost:1/two', events: ['message.posted'] });
  await post(a.ownerApi, ch, { text: 'one post, two endpoints' });
  const [event] = (await eventsOf(h, a.accountId)).filter((e) => e.type === 'message.posted');
  return { one, two, plan: await planFanOut(h.deps, [event.id]) };
}

test('a fan-out plan written twice (two workers holding the same read) writes its rows once, open and unclaimed', async () => {
  const { one, two, plan } = await twoEndpointsPlanned();
  expect(plan.rows).toHaveLength(2);
  const { rows: written } = await writeFanOut(h.deps, plan);
  expect(written.map((r) => r.id).sort()).toEqual(plan.rows.map((r) => r.id).sort());
  const [r1] = await deliveriesOf(h, one.id);
  const [r2] = await deliveriesOf(h, two.id);
  expect([r1, r2].every((r) => r.status === 'pending' && r.claimedUntil === null)).toBe(true);
  // The same plan written again (a second worker holding the same read) writes nothing.
  expect((await writeFanOut(h.deps, plan)).rows).toEqual([]);
});

test('a fan-out write claims the rows it is asked to and answers each as a claim reads it (the row as written, its endpoint, account and body); the others stay unclaimed', async () => {
  const { one, two, plan } = await twoEndpointsPlanned();
  const pick = plan.rows.find((r) => r.endpointId === one.id)!;
  const until = new Date(Date.now() + 15_000);
  const { rows, claimed } = await writeFanOut(h.deps, plan, { ids: new Set([pick.id]), until });
  expect(rows).toHaveLength(2);
  expect([...claimed.keys()]).toEqual([pick.id]);
  const { ctx, claim } = claimed.get(pick.id)!;
  expect(claim).toEqual(until);
  expect(ctx.row.claimedUntil).toEqual(until);
  // Exactly what a read of the row, its endpoint, account and body gives now.
  expect(ctx).toEqual((await loadDeliveryContexts(h.deps.database.db, [pick.id])).get(pick.id));
  const [other] = await deliveriesOf(h, two.id);
  expect(other).toMatchObject({ status: 'pending', claimedUntil: null });
  // Written again (a second worker holding the same read): nothing written, nothing claimed.
  expect(await writeFanOut(h.deps, plan, { ids: new Set([pick.id]), until })).toEqual({ rows: [], claimed: new Map() });
});
