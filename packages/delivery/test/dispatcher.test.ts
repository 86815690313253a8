import { vetWebhookUrl, createMetrics, getMemberByEmail, inFlightKey, isRetryableConflict, newId, nextUtcMidnight, recordHealth, SUCCESS_WRITE_EVERY_MS, unitsKey } from '@teamchat/core';
import { Client } from 'pg';
import { CLAIM_AHEAD_FRESH_MS, CLAIMS_AHEAD_PER_SLOT, ClaimsAhead, Dispatcher, PROBE_PAUSE_MAX_MS, PROBE_PAUSE_MS, SLOT_HANDOFF_MS, SLOT_KEEP_MS, WebhookTransport, acquireInFlightSlots, attemptOne, claimAndReadDeliveries, closeDelivered, fanOutEvents, planFanOut, record, runPipeline, writeFanOut, type AttemptOutcome } from '../src';
import { accounts, eq, inArray, sql, webhookBodies, webhookDeliveries, webhookEndpoints } from '@teamchat/db';
import { createMigratedDatabase, dropDatabase } from '../../../test/support/databases';
import type { Harness } from '../../../test/support/harness';
import { startReceiver, type Receiver } from '../../../test/support/https-receiver';
import { addToChannel, eventsOf, makeChannel, memberCaller, messagingAccount, post } from '../../../test/support/messaging';
import { TEST_TIMEOUT_MS, createEndpointRow, deliveriesOf, eventually, startWebhookHarness } from '../../../test/support/webhooks';
import { queriesDuring } from '../../../test/support/round-trips';

/**
 * The dispatcher (core dispatcher.ts) and the attempt pipeline (pipeline.ts), called directly: no
 * worker runs in this file. Rows wait per account and go out on their account's in-flight slots
 * only; each row's attempt records itself when its own answer comes, so a hanging receiver holds
 * only its own account's slots. A database of its own: another file's worker (e.g. the whole
 * service started by test/start.test.ts) relays every account's events in the run's database,
 * and would fan out this file's events before the test does.
 */
jest.setTimeout(30_000);

let db: { name: string; url: string };
let h: Harness;
let hang: Receiver;
let ok: Receiver;
let transport: WebhookTransport;
beforeAll(async () => {
  db = await createMigratedDatabase('teamchat_whdispatch');
  h = await startWebhookHarness({ databaseUrl: db.url });
  hang = await startReceiver();
  hang.fallback = { hang: true };
  ok = await startReceiver();
  transport = new WebhookTransport(h.deps.config);
});
afterAll(async () => {
  await transport.close();
  await hang.close();
  await ok.close();
  await h.close();
  await dropDatabase(db.name);
});

/** A dispatcher of its own, with the outcomes it recorded. */
function dispatcher() {
  const outcomes: AttemptOutcome[] = [];
  const d = new Dispatcher(h.deps, transport, (o) => outcomes.push(o));
  /** Fans the events out, hands the rows to the dispatcher, and resolves once every row is attempted and recorded. */
  const run = async (eventIds: string[]) => {
    const rows = await fanOutEvents(h.deps, eventIds);
    expect(d.submit(rows)).toBe(rows.length);
    await eventually(async () => d.stats().waiting === 0 && d.stats().inFlight === 0, 25_000, 'the dispatcher to finish');
    return rows;
  };
  return { d, outcomes, run };
}

/** `n` pending first attempts of one endpoint, written straight into the log with one stored body (no event behind them). */
async function pendingRows(accountId: string, endpointId: string, n: number): Promise<Array<{ id: string; accountId: string; endpointId: string }>> {
  const db = h.deps.database.db;
  const bodyId = newId('webhookBody');
  await db.insert(webhookBodies).values({ id: bodyId, accountId, eventId: newId('event'), eventType: 'message.posted', mode: 'pointers', body: '{}' });
  const rows = Array.from({ length: n }, () => ({ id: newId('delivery'), accountId, endpointId }));
  await db.insert(webhookDeliveries).values(rows.map((r) => ({
    id: r.id, chainId: r.id, attempt: 1, status: 'pending', kind: 'event', accountId, endpointId,
    eventId: newId('event'), eventType: 'message.posted', bodyId, eventCreatedAt: new Date(),
  })));
  return rows;
}

const postedIds = async (accountId: string) => (await eventsOf(h, accountId)).filter((e) => e.type === 'message.posted').map((e) => e.id);

test('a hanging receiver holds only its own account\'s slots: the other account\'s rows go out at once, the hung attempt records itself', async () => {
  const x = await messagingAccount(h);
  const y = await messagingAccount(h);
  const xc = await makeChannel(x.ownerApi);
  const yc = await makeChannel(y.ownerApi);
  const hung = await createEndpointRow(h, { accountId: x.accountId, createdByUserId: x.owner.userId, url: hang.url('/hang'), events: ['message.posted'] });
  const fine = await createEndpointRow(h, { accountId: y.accountId, createdByUserId: y.owner.userId, url: ok.url('/ok'), events: ['message.posted'] });
  for (let i = 0; i < 6; i++) await post(x.ownerApi, xc, { text: `to a receiver that never answers ${i}` }); // cap 4: two wait
  for (let i = 0; i < 8; i++) await post(y.ownerApi, yc, { text: `to a healthy receiver ${i}` }); // cap 4: two turns
  const { d, outcomes, run } = dispatcher();

  const xRun = run(await postedIds(x.accountId));
  await eventually(async () => hang.received.filter((r) => r.path === '/hang').length === 4, 5_000, 'X\'s four attempts on the wire');
  // While X's four hang, its other two wait unclaimed for X's own slots.
  const xWaiting = (await deliveriesOf(h, hung.id)).filter((r) => r.status === 'pending' && r.claimedUntil === null);
  expect(xWaiting).toHaveLength(2);
  const yStarted = Date.now();
  await run(await postedIds(y.accountId));
  const arrivals = ok.received.filter((r) => r.path === '/ok');
  expect(arrivals).toHaveLength(8);
  // Y's rows arrived while X's four were still hanging, long before their timeout.
  const xHungAt = Math.min(...hang.received.filter((r) => r.path === '/hang').map((r) => r.at));
  expect(Math.max(...arrivals.map((r) => r.at))).toBeLessThan(xHungAt + TEST_TIMEOUT_MS);
  expect(Math.max(...arrivals.map((r) => r.at)) - yStarted).toBeLessThan(TEST_TIMEOUT_MS - 500);
  await xRun;
  // X's six were each attempted in turn on X's four slots, and recorded: failed, each with its retry row.
  const xRows = await deliveriesOf(h, hung.id);
  expect(xRows.filter((r) => r.attempt === 1).map((r) => r.status)).toEqual(Array(6).fill('failed'));
  expect(xRows.filter((r) => r.attempt === 2 && r.status === 'retrying')).toHaveLength(6);
  expect(outcomes.filter((o) => o.kind === 'done' && o.next).map((o) => (o as { next: { id: string } }).next.id).sort())
    .toEqual(xRows.filter((r) => r.attempt === 2).map((r) => r.id).sort());
  expect((await deliveriesOf(h, fine.id)).every((r) => r.status === 'delivered')).toBe(true);
  await d.close();
});

test('each attempt spends one call unit on the seat of the endpoint\'s creator, and only there', async () => {
  expect(h.deps.config.limitsEnabled).toBe(true);
  const a = await messagingAccount(h);
  const ch = await makeChannel(a.ownerApi);
  const poster = await memberCaller(h, a.accountId);
  await addToChannel(a.ownerApi, ch, poster.identityId);
  const posterUserId = (await getMemberByEmail(h.deps.database.db, a.accountId, poster.email))!.userId;
  await createEndpointRow(h, { accountId: a.accountId, createdByUserId: a.owner.userId, url: ok.url('/units'), events: ['message.posted'] });
  for (let i = 0; i < 6; i++) await post(poster, ch, { text: `charged to the creator ${i}` }); // cap 4: two turns
  const now = h.deps.now();
  const used = async (userId: string) => Number(await h.deps.redis.get(unitsKey(h.deps.config, a.accountId, userId, now)) ?? 0);
  const [creatorBefore, posterBefore] = [await used(a.owner.userId), await used(posterUserId)];

  const { d, outcomes, run } = dispatcher();
  await run(await postedIds(a.accountId));
  expect(outcomes.filter((o) => o.kind === 'done' && o.status === 'delivered')).toHaveLength(6);
  expect(await used(a.owner.userId)).toBe(creatorBefore + 6);
  expect(await used(posterUserId)).toBe(posterBefore);
  await d.close();
});

test('rows handed over at once on one account keep to its in-flight cap; every row is delivered once, none left claimed', async () => {
  const a = await messagingAccount(h);
  const ch = await makeChannel(a.ownerApi);
  const ep = await createEndpointRow(h, { accountId: a.accountId, createdByUserId: a.owner.userId, url: ok.url('/shared'), events: ['message.posted'] });
  for (let i = 0; i < 12; i++) await post(a.ownerApi, ch, { text: `one account ${i}` });
  const ids = await postedIds(a.accountId);
  ok.fallback = { status: 200, delayMs: 60 };
  ok.maxInFlight = 0;
  const { d, outcomes } = dispatcher();
  try {
    // Three fan-outs of 4 handed over at once on one account whose cap is 4.
    const parts = await Promise.all([ids.slice(0, 4), ids.slice(4, 8), ids.slice(8)].map((part) => fanOutEvents(h.deps, part)));
    for (const rows of parts) d.submit(rows);
    await eventually(async () => d.stats().waiting === 0 && d.stats().inFlight === 0, 10_000, 'the dispatcher to finish');
    expect(outcomes.filter((o) => o.kind === 'done' && o.status === 'delivered')).toHaveLength(12);
  } finally {
    ok.fallback = { status: 200 };
    await d.close();
  }
  expect(ok.maxInFlight).toBeLessThanOrEqual(4);
  const rows = await deliveriesOf(h, ep.id);
  expect(rows).toHaveLength(12);
  expect(rows.every((r) => r.status === 'delivered' && r.claimedUntil === null && r.attempt === 1)).toBe(true);
  expect(ok.received.filter((r) => r.path === '/shared')).toHaveLength(12);
});

test('the endpoints of one account take turns: one endpoint\'s backlog to a hanging receiver leaves slots for the account\'s other endpoint', async () => {
  const a = await messagingAccount(h);
  const ch = await makeChannel(a.ownerApi);
  await createEndpointRow(h, { accountId: a.accountId, createdByUserId: a.owner.userId, url: hang.url('/hang-one-endpoint'), events: ['message.posted'] });
  for (let i = 0; i < 8; i++) await post(a.ownerApi, ch, { text: `to the hanging endpoint ${i}` });
  const { d } = dispatcher();
  try {
    d.submit(await fanOutEvents(h.deps, await postedIds(a.accountId)));
    await eventually(async () => hang.received.filter((r) => r.path === '/hang-one-endpoint').length === 4, 5_000, 'the hanging endpoint holding the cap');
    // A second endpoint of the same account gets its turn as soon as one of the hanging endpoint's
    // attempts ends: from then on the hanging endpoint is held to its part (half of the cap).
    const second = await createEndpointRow(h, { accountId: a.accountId, createdByUserId: a.owner.userId, url: ok.url('/second-endpoint'), events: ['message.posted'] });
    const before = new Set(await postedIds(a.accountId));
    for (let i = 0; i < 6; i++) await post(a.ownerApi, ch, { text: `to both endpoints ${i}` });
    const later = (await postedIds(a.accountId)).filter((id) => !before.has(id));
    const submittedAt = Date.now();
    d.submit((await fanOutEvents(h.deps, later)));
    await eventually(async () => (await deliveriesOf(h, second.id)).filter((r) => r.status === 'delivered').length === 6, 15_000, 'the second endpoint\'s rows');
    // Within about one hanging attempt's timeout, not behind the first endpoint's whole backlog (14 rows, 4 at a time).
    expect(Date.now() - submittedAt).toBeLessThan(2 * TEST_TIMEOUT_MS);
  } finally {
    await d.close();
  }
});

test('rounds that close at once on the same endpoints all close: every row delivered once, none lost to a deadlock', async () => {
  // Rounds give their slots back before they record, so their closes run concurrently, each
  // touching the health of the same endpoints: in the webhooks bench they deadlocked (PostgreSQL
  // aborted one, whose delivered rows were then sent again) until the endpoints were locked in id
  // order. This run does not force that interleaving every time; it holds the outcome: 32
  // endpoints, 16 closes at once, each with 4 rows of every endpoint in its own order, three times
  // over, every endpoint's health due each time, and every row closed exactly once.
  const a = await messagingAccount(h);
  const eps: string[] = [];
  for (let i = 0; i < 32; i++) eps.push((await createEndpointRow(h, { accountId: a.accountId, createdByUserId: a.owner.userId, url: ok.url(`/close-${i}`), events: ['message.posted'] })).id);
  const db = h.deps.database.db;
  const bodyId = newId('webhookBody');
  await db.insert(webhookBodies).values({ id: bodyId, accountId: a.accountId, eventId: newId('event'), eventType: 'message.posted', mode: 'pointers', body: '{}' });
  const claim = new Date(Date.now() + 60_000);
  const shuffled = <T>(xs: T[]) => xs.map((x) => [Math.random(), x] as const).sort((p, q) => p[0] - q[0]).map(([, x]) => x);
  const closed = new Set<string>();
  for (let wave = 0; wave < 3; wave++) {
    const closes = Array.from({ length: 16 }, () => shuffled([...eps, ...eps, ...eps, ...eps]).map((endpointId) => ({ id: newId('delivery'), endpointId, createdAt: new Date() })));
    await db.insert(webhookDeliveries).values(closes.flat().map((r) => ({
      id: r.id, chainId: r.id, attempt: 1, status: 'pending', kind: 'event', accountId: a.accountId, endpointId: r.endpointId,
      eventId: newId('event'), eventType: 'message.posted', bodyId, eventCreatedAt: new Date(), claimedUntil: claim, createdAt: r.createdAt,
    })));
    await db.update(webhookEndpoints).set({ failingSince: new Date(), lastSuccessAt: null }).where(inArray(webhookEndpoints.id, eps));
    const now = h.deps.now();
    const results = await Promise.all(closes.map((rows) => closeDelivered(db, { rows: rows.map((r) => ({ deliveryId: r.id, createdAt: r.createdAt, claim, responseStatus: 200, latencyMs: 3, attemptedAt: now })) })));
    for (const [k, ids] of results.entries()) {
      expect([...ids].sort()).toEqual(closes[k].map((r) => r.id).sort());
      for (const id of ids) closed.add(id);
    }
    const health = await db.select().from(webhookEndpoints).where(inArray(webhookEndpoints.id, eps));
    expect(health.every((e) => e.failingSince === null && e.lastSuccessAt !== null)).toBe(true);
  }
  expect(closed.size).toBe(3 * 16 * 4 * 32);
  const rows = await db.select().from(webhookDeliveries).where(inArray(webhookDeliveries.id, [...closed]));
  expect(rows.every((r) => r.status === 'delivered' && r.claimedUntil === null)).toBe(true);
});

test('one close takes rows of several weekly partitions (its plan keeps to the partitions of the rows\' created_at), and no row outside them', async () => {
  const a = await messagingAccount(h);
  const ep = await createEndpointRow(h, { accountId: a.accountId, createdByUserId: a.owner.userId, url: ok.url('/close-partitions'), events: ['message.posted'] });
  const db = h.deps.database.db;
  const bodyId = newId('webhookBody');
  await db.insert(webhookBodies).values({ id: bodyId, accountId: a.accountId, eventId: newId('event'), eventType: 'message.posted', mode: 'pointers', body: '{}' });
  const claim = new Date(Date.now() + 60_000);
  const day = 24 * 3600_000;
  // Microseconds in created_at: a Date holds only milliseconds, and the bounds must still cover the row.
  const rows = [0, 8, 15].map((daysAgo) => ({ id: newId('delivery'), createdAt: new Date(Date.now() - daysAgo * day) }));
  await db.insert(webhookDeliveries).values(rows.map((r) => ({
    id: r.id, chainId: r.id, attempt: 1, status: 'pending', kind: 'event', accountId: a.accountId, endpointId: ep.id,
    eventId: newId('event'), eventType: 'message.posted', bodyId, eventCreatedAt: r.createdAt, claimedUntil: claim, createdAt: r.createdAt,
  })));
  await db.execute(sql`UPDATE webhook_deliveries SET created_at = created_at + interval '999 microseconds' WHERE id = ${rows[0].id}`);
  const closed = await closeDelivered(db, { rows: rows.map((r) => ({ deliveryId: r.id, createdAt: r.createdAt, claim, responseStatus: 200, latencyMs: 3, attemptedAt: new Date() })) });
  expect([...closed].sort()).toEqual(rows.map((r) => r.id).sort());
  // A row dated outside the bounds given is not closed (the bounds are the rows' own).
  const stray = { id: newId('delivery'), createdAt: new Date(Date.now() - 20 * day) };
  await db.insert(webhookDeliveries).values({
    id: stray.id, chainId: stray.id, attempt: 1, status: 'pending', kind: 'event', accountId: a.accountId, endpointId: ep.id,
    eventId: newId('event'), eventType: 'message.posted', bodyId, eventCreatedAt: stray.createdAt, claimedUntil: claim, createdAt: stray.createdAt,
  });
  expect((await closeDelivered(db, { rows: [{ deliveryId: stray.id, createdAt: new Date(Date.now() - 1000), claim, responseStatus: 200, latencyMs: 3, attemptedAt: new Date() }] })).size).toBe(0);
  expect((await closeDelivered(db, { rows: [{ deliveryId: stray.id, createdAt: stray.createdAt, claim, responseStatus: 200, latencyMs: 3, attemptedAt: new Date() }] })).size).toBe(1);
});

test('a deadlock or serialization failure is a conflict to run again; other errors are not', () => {
  expect(isRetryableConflict(Object.assign(new Error('deadlock detected'), { code: '40P01' }))).toBe(true);
  expect(isRetryableConflict(Object.assign(new Error('could not serialize access'), { code: '40001' }))).toBe(true);
  expect(isRetryableConflict(Object.assign(new Error('unique violation'), { code: '23505' }))).toBe(false);
  expect(isRetryableConflict(new Error('connection terminated'))).toBe(false);
});

test('rows that waited for a slot are not sent once their endpoint was disabled meanwhile: the pipeline reads each row\'s endpoint under its slot, before charging', async () => {
  const a = await messagingAccount(h);
  const ch = await makeChannel(a.ownerApi);
  const ep = await createEndpointRow(h, { accountId: a.accountId, createdByUserId: a.owner.userId, url: ok.url('/disabled-meanwhile'), events: ['message.posted'] });
  for (let i = 0; i < 3; i++) await post(a.ownerApi, ch, { text: `waits for a slot ${i}` });
  // Every slot of the account is held elsewhere: the rows wait in the dispatcher.
  const held = await acquireInFlightSlots(h.deps, new Map([[a.accountId, 4]]), 30_000, 'procElsewhere');
  expect(held.count(a.accountId)).toBe(4);
  const units = async () => Number(await h.deps.redis.get(unitsKey(h.deps.config, a.accountId, a.owner.userId, h.deps.now())) ?? 0);
  const unitsBefore = await units();
  const { d, outcomes } = dispatcher();
  try {
    expect(d.submit(await fanOutEvents(h.deps, await postedIds(a.accountId)))).toBe(3);
    await new Promise((r) => setTimeout(r, 200));
    expect(d.stats()).toEqual({ waiting: 3, inFlight: 0, accounts: 1 });
    // The backlog gauge (docs/operations.md "Metrics") reads the dispatcher at scrape time.
    h.deps.metrics.watchDispatcher(() => d.stats());
    const scraped = await h.deps.metrics.registry.metrics();
    expect(scraped).toContain('teamchat_webhook_dispatcher_rows{state="waiting"} 3');
    expect(scraped).toContain('teamchat_webhook_dispatcher_rows{state="in_flight"} 0');
    expect(scraped).toContain('teamchat_webhook_dispatcher_accounts 1');
    await h.deps.database.db.update(webhookEndpoints).set({ enabled: false, disabledReason: 'manual' }).where(eq(webhookEndpoints.id, ep.id));
    await held.release();
    await eventually(async () => d.stats().waiting === 0 && d.stats().inFlight === 0, 5_000, 'the dispatcher to finish');
  } finally {
    await d.close();
  }
  expect(ok.received.filter((r) => r.path === '/disabled-meanwhile')).toHaveLength(0);
  expect(outcomes.every((o) => o.kind === 'done' && o.status === 'dead')).toBe(true);
  const rows = await deliveriesOf(h, ep.id);
  expect(rows.every((r) => r.status === 'dead' && r.error === 'dropped: endpoint disabled (manual)' && r.claimedUntil === null && r.attemptedAt === null)).toBe(true);
  // Nothing was sent, nothing was charged.
  expect(await units()).toBe(unitsBefore);
});

test('in-flight slots are shared fairly between worker processes: a lone process gets the whole cap, two busy ones half each, never more than the cap', async () => {
  const a = await messagingAccount(h); // cap 4
  const want = new Map([[a.accountId, 4]]);
  // Process A alone: the whole cap.
  const a1 = await acquireInFlightSlots(h.deps, want, 30_000, 'procA');
  expect(a1.count(a.accountId)).toBe(4);
  // Process B asks while A holds everything: nothing, but B's demand is recorded.
  const b1 = await acquireInFlightSlots(h.deps, want, 30_000, 'procB');
  expect(b1.count(a.accountId)).toBe(0);
  // A gives its slots back and asks again while B is waiting: A is held to its share.
  await a1.release();
  const a2 = await acquireInFlightSlots(h.deps, want, 30_000, 'procA');
  expect(a2.count(a.accountId)).toBe(2);
  expect(a2.shares.get(a.accountId)).toBe(2); // the share Redis answers, which the dispatcher keeps to
  // A asking again in the same breath gets nothing more: it holds its share.
  const a3 = await acquireInFlightSlots(h.deps, want, 30_000, 'procA');
  expect(a3.count(a.accountId)).toBe(0);
  const b2 = await acquireInFlightSlots(h.deps, want, 30_000, 'procB');
  expect(b2.count(a.accountId)).toBe(2);
  // Both busy, the cap is full: a third process gets nothing.
  const c1 = await acquireInFlightSlots(h.deps, want, 30_000, 'procC');
  expect(c1.count(a.accountId)).toBe(0);
  await Promise.all([a2.release(), b2.release()]);
  // Once the others stop asking (their demand is older than 100 ms), one process gets the whole cap again.
  await new Promise((r) => setTimeout(r, 150));
  const a4 = await acquireInFlightSlots(h.deps, want, 30_000, 'procA');
  expect(a4.count(a.accountId)).toBe(4);
  expect(a4.shares.get(a.accountId)).toBe(4);
  await a4.release();
});

test('a process that holds slots of an account counts in its share without asking again: the share does not flip while its slots go from row to row', async () => {
  const a = await messagingAccount(h); // cap 4
  const want = new Map([[a.accountId, 4]]);
  const a1 = await acquireInFlightSlots(h.deps, want, 30_000, 'procA');
  const b1 = await acquireInFlightSlots(h.deps, want, 30_000, 'procB');
  await a1.release();
  const a2 = await acquireInFlightSlots(h.deps, want, 30_000, 'procA');
  const b2 = await acquireInFlightSlots(h.deps, want, 30_000, 'procB');
  expect([a2.count(a.accountId), b2.count(a.accountId)]).toEqual([2, 2]);
  // B hands its two slots from row to row (dispatcher.ts handOff) and asks Redis for nothing;
  // its last ask is older than 100 ms. A's next ask still finds B busy: A's share stays 2, so A
  // does not claim rows for four slots and then find only two.
  await new Promise((r) => setTimeout(r, 150));
  await a2.release();
  const a3 = await acquireInFlightSlots(h.deps, want, 30_000, 'procA');
  expect(a3.count(a.accountId)).toBe(2);
  expect(a3.shares.get(a.accountId)).toBe(2);
  // Once B's slots are back and its last ask is old, A gets the whole cap.
  await Promise.all([a3.release(), b1.release(), b2.release()]);
  await new Promise((r) => setTimeout(r, 150));
  const a4 = await acquireInFlightSlots(h.deps, want, 30_000, 'procA');
  expect(a4.count(a.accountId)).toBe(4);
  expect(a4.shares.get(a.accountId)).toBe(4);
  await a4.release();
});

test('a killed process counts in an account\'s share only until its leases expire: then another process gets the whole cap', async () => {
  const a = await messagingAccount(h); // cap 4
  const want = new Map([[a.accountId, 4]]);
  // procDead takes two slots for 400 ms and is never heard of again (no release, no ask).
  const dead = await acquireInFlightSlots(h.deps, new Map([[a.accountId, 2]]), 400, 'procDead');
  expect(dead.count(a.accountId)).toBe(2);
  const a1 = await acquireInFlightSlots(h.deps, want, 30_000, 'procA');
  expect(a1.count(a.accountId)).toBe(2);
  expect(a1.shares.get(a.accountId)).toBe(2);
  await a1.release();
  // Its leases expired and its last ask is old: it counts for nothing, its slots are free.
  await new Promise((r) => setTimeout(r, 500));
  const a2 = await acquireInFlightSlots(h.deps, want, 30_000, 'procA');
  expect(a2.count(a.accountId)).toBe(4);
  expect(a2.shares.get(a.accountId)).toBe(4);
  await a2.release();
});

test('a slow receiver holds nobody else\'s slots: another account\'s rows go out while its answers are awaited', async () => {
  const slow = await startReceiver();
  slow.fallback = { status: 200, delayMs: 2_000 };
  const x = await messagingAccount(h);
  const y = await messagingAccount(h);
  const xc = await makeChannel(x.ownerApi);
  const yc = await makeChannel(y.ownerApi);
  const tag = newId('event');
  await createEndpointRow(h, { accountId: x.accountId, createdByUserId: x.owner.userId, url: ok.url(`/turn-x-${tag}`), events: ['message.posted'] });
  await createEndpointRow(h, { accountId: y.accountId, createdByUserId: y.owner.userId, url: slow.url(`/turn-y-${tag}`), events: ['message.posted'] });
  for (let i = 0; i < 8; i++) await post(x.ownerApi, xc, { text: `fast ${i}` });
  for (let i = 0; i < 8; i++) await post(y.ownerApi, yc, { text: `slow ${i}` });
  const { d, outcomes } = dispatcher();
  try {
    d.submit(await fanOutEvents(h.deps, await postedIds(y.accountId)));
    await eventually(async () => slow.received.filter((r) => r.path === `/turn-y-${tag}`).length === 4, 5_000, 'Y\'s first four on the wire');
    const submittedAt = Date.now();
    d.submit(await fanOutEvents(h.deps, await postedIds(x.accountId)));
    await eventually(async () => d.stats().waiting === 0 && d.stats().inFlight === 0, 10_000, 'the dispatcher to finish');
    const xAt = ok.received.filter((r) => r.path === `/turn-x-${tag}`).map((r) => r.at);
    expect(xAt).toHaveLength(8);
    // Both of X's turns (cap 4) went while Y's answers were still about 2 s away.
    expect(Math.max(...xAt) - submittedAt).toBeLessThan(1_500);
    expect(outcomes.filter((o) => o.kind === 'done' && o.status === 'delivered')).toHaveLength(16);
  } finally {
    await d.close();
    await slow.close();
  }
});

test('an answer that comes after the answer time is a timeout, even a 2xx; one within it counts (spec: 2xx within the timeout)', async () => {
  const late = await startReceiver();
  const short = new WebhookTransport({ ...h.deps.config, webhookTimeoutMs: 300 });
  try {
    const target = await vetWebhookUrl(late.url('/late'), { allowedHosts: h.deps.config.webhookAllowedHosts });
    late.fallback = { status: 200, delayMs: 330 };
    const slow = await short.post(target, { 'content-type': 'application/json' }, '{}');
    expect(slow).toMatchObject({ status: null, error: 'timeout: no answer in time' });
    expect(slow.latencyMs).toBeGreaterThanOrEqual(300);
    late.fallback = { status: 200 };
    expect(await short.post(target, { 'content-type': 'application/json' }, '{}')).toMatchObject({ status: 200, error: null });
  } finally {
    await short.close();
    await late.close();
  }
});

test.each([
  ['a quick receiver', 0],
  // A receiver that takes a while keeps rows claimed on the wire while the lane reads more: the
  // read does not see them, and must still not take its short answer for the end of the backlog.
  ['a receiver that answers after 40 ms', 40],
])('an account with more rows than its lane holds (%s): the lane reads the rest from the database as it drains, without waiting for the sweep', async (_name, delayMs) => {
  const receiver = delayMs === 0 ? ok : await startReceiver();
  if (delayMs > 0) receiver.fallback = { status: 200, delayMs };
  const a = await messagingAccount(h);
  const ep = await createEndpointRow(h, { accountId: a.accountId, createdByUserId: a.owner.userId, url: receiver.url('/overflow'), events: ['message.posted'] });
  const rows = await pendingRows(a.accountId, ep.id, 120);
  const d = new Dispatcher(h.deps, transport, () => undefined, { maxWaitingPerAccount: 20 });
  try {
    expect(d.submit(rows)).toBe(20); // the lane holds 20; the other 100 stay open in the database
    await eventually(async () => (await deliveriesOf(h, ep.id)).every((r) => r.status === 'delivered'), 15_000, 'every row delivered');
    expect(receiver.received.filter((r) => r.path === '/overflow')).toHaveLength(120);
  } finally {
    await d.close();
    if (receiver !== ok) await receiver.close();
  }
});

test('a process at its in-flight cap goes on once rows finish: quick 2xx answers give their slots back before their records, and the rows finishing after that ask again', async () => {
  // Rows count against the process's cap until recorded, and a quick 2xx's slot goes back (and
  // asks again) before its row is recorded: an ask then found the cap reached, and when the rows
  // finished nothing asked again, the lanes full and nothing on the wire (a worker drained 11,000
  // of 20,000 rows in the webhooks bench and stopped). A cap of 2 over 3 accounts makes it bind
  // on almost every answer.
  const accounts = await Promise.all([0, 1, 2].map(() => messagingAccount(h)));
  const eps = await Promise.all(accounts.map((a, i) => createEndpointRow(h, { accountId: a.accountId, createdByUserId: a.owner.userId, url: ok.url(`/cap-${i}`), events: ['message.posted'] })));
  const rows = (await Promise.all(accounts.map((a, i) => pendingRows(a.accountId, eps[i].id, 30)))).flat();
  const d = new Dispatcher(h.deps, transport, () => undefined, { maxInFlight: 2 });
  try {
    expect(d.submit(rows)).toBe(90);
    await eventually(async () => (await Promise.all(eps.map((e) => deliveriesOf(h, e.id)))).flat().every((r) => r.status === 'delivered'), 20_000, 'every row delivered');
    expect(d.stats()).toMatchObject({ waiting: 0, inFlight: 0 });
    // A lane is forgotten once the slots it kept for its account's next row went back (SLOT_KEEP_MS).
    await eventually(async () => d.stats().accounts === 0, 5_000, 'the lanes forgotten');
  } finally {
    await d.close();
  }
});

test('a quick 2xx is off the wire before it is recorded (its slot goes back then); a failed attempt is not (its slot is held through its own record)', async () => {
  const a = await messagingAccount(h);
  const ch = await makeChannel(a.ownerApi);
  await createEndpointRow(h, { accountId: a.accountId, createdByUserId: a.owner.userId, url: ok.url('/quick'), events: ['message.posted'] });
  await post(a.ownerApi, ch, { text: 'quick' });
  await post(a.ownerApi, ch, { text: 'failing' });
  const [first, second] = await fanOutEvents(h.deps, await postedIds(a.accountId));
  const calls: Array<{ index: number; recorded: boolean }> = [];
  let recorded = false;
  const [quick] = await runPipeline(h.deps, transport, [first.id], (index) => calls.push({ index, recorded }));
  const outcome = await quick.then((o) => { recorded = true; return o; });
  expect(outcome).toMatchObject({ kind: 'done', status: 'delivered' });
  expect(calls).toEqual([{ index: 0, recorded: false }]);

  ok.fallback = { status: 500 };
  try {
    calls.length = 0;
    const [failing] = await runPipeline(h.deps, transport, [second.id], (index) => calls.push({ index, recorded }));
    expect(await failing).toMatchObject({ kind: 'done', status: 'failed' });
    expect(calls).toEqual([]);
  } finally {
    ok.fallback = { status: 200 };
  }
});

test('the close of a quick 2xx nobody waits for (the dispatcher\'s rows) gathers for GATHER_MS: two answers read in separate turns share one statement', async () => {
  const a = await messagingAccount(h);
  const ch = await makeChannel(a.ownerApi);
  await createEndpointRow(h, { accountId: a.accountId, createdByUserId: a.owner.userId, url: ok.url('/gather'), events: ['message.posted'] });
  const seen = new Set<string>();
  let shared = 0;
  // The second answer comes 2 ms after the first, in a turn of its own; on a loaded machine the
  // two reads may still fall further apart than the gather, so this tries a few pairs, checking each.
  for (let attempt = 0; attempt < 10 && shared === 0; attempt += 1) {
    await post(a.ownerApi, ch, { text: `first ${attempt}` });
    await post(a.ownerApi, ch, { text: `second ${attempt}` });
    const ids = (await postedIds(a.accountId)).filter((id) => !seen.has(id));
    ids.forEach((id) => seen.add(id));
    const rows = await fanOutEvents(h.deps, ids);
    expect(rows).toHaveLength(2);
    ok.script({ status: 200 }, { status: 200, delayMs: 2 });
    let outcomes: AttemptOutcome[] = [];
    const sent = await queriesDuring(async () => {
      outcomes = await Promise.all(await runPipeline(h.deps, transport, rows.map((r) => r.id), () => undefined));
    });
    expect(outcomes.map((o) => o.kind === 'done' && o.status)).toEqual(['delivered', 'delivered']);
    const closes = sent.filter((q) => q === 'webhook_close_delivered_claims').length;
    expect([1, 2]).toContain(closes);
    if (closes === 1) shared += 1;
  }
  expect(shared).toBe(1);
});

test('call units at the day\'s end (spec: Delivery behaviour 4): a seat with 3 units left and 4 attempts in one pipeline sends 3; the 4th waits as retrying until the reset', async () => {
  const a = await messagingAccount(h);
  const ep = await createEndpointRow(h, { accountId: a.accountId, createdByUserId: a.owner.userId, url: ok.url('/units-left'), events: ['message.posted'] });
  const rows = await pendingRows(a.accountId, ep.id, 4);
  const now = h.deps.now();
  const [account] = await h.deps.database.db.select({ plan: accounts.plan }).from(accounts).where(eq(accounts.id, a.accountId));
  const limit = h.deps.config.planLimits[account.plan as keyof typeof h.deps.config.planLimits].unitsPerDay;
  const key = unitsKey(h.deps.config, a.accountId, a.owner.userId, now);
  await h.deps.redis.set(key, String(limit - 3));
  const outcomes = await Promise.all(await runPipeline(h.deps, transport, rows.map((r) => r.id), () => undefined));
  expect(outcomes.filter((o) => o.kind === 'done' && o.status === 'delivered')).toHaveLength(3);
  const waiting = outcomes.filter((o) => o.kind === 'wait');
  expect(waiting).toEqual([expect.objectContaining({ reason: 'call_units_spent', until: nextUtcMidnight(now) })]);
  expect(Number(await h.deps.redis.get(key))).toBe(limit);
  const log = await deliveriesOf(h, ep.id);
  expect(log.map((r) => r.status).sort()).toEqual(['delivered', 'delivered', 'delivered', 'retrying']);
  expect(log.find((r) => r.status === 'retrying')!.nextRetryAt!.toISOString()).toBe(nextUtcMidnight(now).toISOString());
});

test('an endpoint whose last attempt failed gets one attempt at a time (a probe), each after a pause that doubles up to PROBE_PAUSE_MAX_MS, until one succeeds; then its rows go out together again', async () => {
  const rx = await startReceiver();
  const a = await messagingAccount(h);
  const ep = await createEndpointRow(h, { accountId: a.accountId, createdByUserId: a.owner.userId, url: rx.url('/probe'), events: ['message.posted'] });
  const rowsOf = (n: number) => pendingRows(a.accountId, ep.id, n);
  const outcomes: AttemptOutcome[] = [];
  const d = new Dispatcher(h.deps, transport, (o) => outcomes.push(o));
  try {
    rx.fallback = { status: 500, delayMs: 60 };
    d.submit(await rowsOf(1));
    await eventually(async () => outcomes.length === 1, 10_000, 'the first failure recorded');
    d.submit(await rowsOf(4));
    await eventually(async () => outcomes.length === 5, 20_000, 'four more failures recorded');
    expect(rx.maxInFlight).toBe(1); // the account's cap is 4: without the probe rule 4 would go at once
    expect(outcomes.every((o) => o.kind === 'done' && o.status === 'failed')).toBe(true);
    // Each probe waited out its pause after the failure before it: 250, 500, 1,000, 1,000 ms
    // (measured from the receiver's arrivals, which also hold the 60 ms answer and the record).
    const at = rx.received.filter((r) => r.path === '/probe').map((r) => r.at);
    expect(at).toHaveLength(5);
    [PROBE_PAUSE_MS, 2 * PROBE_PAUSE_MS, PROBE_PAUSE_MAX_MS, PROBE_PAUSE_MAX_MS].forEach((pause, k) => expect(at[k + 1] - at[k]).toBeGreaterThanOrEqual(pause + 60 - 5));
    expect(at[4] - at[0]).toBeLessThan(10_000);

    rx.fallback = { status: 200, delayMs: 60 };
    d.submit(await rowsOf(1));
    await eventually(async () => outcomes.length === 6, 10_000, 'a success recorded');
    d.submit(await rowsOf(8));
    await eventually(async () => outcomes.length === 14, 20_000, 'eight more deliveries recorded');
    expect(rx.maxInFlight).toBe(4);
  } finally {
    await d.close();
    await rx.close();
  }
});

test('a failing endpoint\'s next probe goes when its pause ends, even while the account\'s other endpoint holds slots with long attempts', async () => {
  const fails = await startReceiver();
  const slowRx = await startReceiver();
  fails.fallback = { status: 500 };
  slowRx.fallback = { status: 200, delayMs: 4_000 };
  const a = await messagingAccount(h);
  const failing = await createEndpointRow(h, { accountId: a.accountId, createdByUserId: a.owner.userId, url: fails.url('/fails'), events: ['message.posted'] });
  const slow = await createEndpointRow(h, { accountId: a.accountId, createdByUserId: a.owner.userId, url: slowRx.url('/slow'), events: ['message.posted'] });
  const { d, outcomes } = dispatcher();
  try {
    d.submit(await pendingRows(a.accountId, failing.id, 1));
    await eventually(async () => outcomes.length === 1, 10_000, 'the first failure recorded');
    const failedAt = Date.now();
    // The other endpoint's attempts go at once and hold their slots for 4 s; the failing
    // endpoint's next row waits out only its pause (PROBE_PAUSE_MS).
    d.submit([...(await pendingRows(a.accountId, slow.id, 2)), ...(await pendingRows(a.accountId, failing.id, 1))]);
    await eventually(async () => fails.received.length === 2, 10_000, 'the second probe');
    const probedAt = fails.received[1].at;
    expect(probedAt - failedAt).toBeGreaterThanOrEqual(PROBE_PAUSE_MS - 50);
    expect(probedAt - failedAt).toBeLessThan(1_500); // not seconds later, when the slow attempts end
    expect(slowRx.received).toHaveLength(2);
  } finally {
    await d.close();
    await fails.close();
    await slowRx.close();
  }
});

/** Every lease token Redis holds for the account, sampled every few ms until `stop`. */
function sampleLeases(accountId: string): { tokens: Set<string>; stop: () => Promise<void> } {
  const key = inFlightKey(h.deps.config, accountId);
  const tokens = new Set<string>();
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      for (const t of await h.deps.redis.zrange(key, 0, -1)) tokens.add(t);
      await new Promise((r) => setTimeout(r, 2));
    }
  })();
  return {
    tokens,
    stop: async () => {
      sampling = false;
      await sampler;
    },
  };
}

test('a slot that came off the wire goes straight to the account\'s next row (no round trip to Redis), for at most SLOT_HANDOFF_MS after Redis granted it; the cap holds throughout', async () => {
  const rx = await startReceiver();
  const a = await messagingAccount(h); // cap 4
  const ep = await createEndpointRow(h, { accountId: a.accountId, createdByUserId: a.owner.userId, url: rx.url('/handoff'), events: ['message.posted'] });
  const rows = await pendingRows(a.accountId, ep.id, 240);
  const outcomes: AttemptOutcome[] = [];
  const d = new Dispatcher(h.deps, transport, (o) => outcomes.push(o));
  // The account's leases as Redis holds them, sampled while the rows go out.
  const { tokens, stop } = sampleLeases(a.accountId);
  try {
    // 240 rows, 4 at a time, ~60 ms each: about 3.6 s on the wire, past SLOT_HANDOFF_MS.
    rx.fallback = { status: 200, delayMs: 60 };
    const started = Date.now();
    expect(d.submit(rows)).toBe(240);
    await eventually(async () => outcomes.length === 240, 25_000, 'every row recorded');
    const took = Date.now() - started;
    expect(outcomes.every((o) => o.kind === 'done' && o.status === 'delivered')).toBe(true);
    expect(rx.maxInFlight).toBe(4);
    // Each lease served many attempts (handed on), yet none lived past its window: the slots went
    // back to Redis and were taken again at least once per SLOT_HANDOFF_MS of sending.
    expect(tokens.size).toBeLessThan(40);
    expect(tokens.size).toBeGreaterThanOrEqual(4 * Math.floor(took / (SLOT_HANDOFF_MS + 500)) + 4);
  } finally {
    await stop();
    await d.close();
    await rx.close();
  }
});

test('a close its caller waits for (a test event\'s or a replay\'s: attemptOne) does not gather: it runs at once, apart from a gathering close', async () => {
  const rx = await startReceiver();
  const a = await messagingAccount(h);
  const ep = await createEndpointRow(h, { accountId: a.accountId, createdByUserId: a.owner.userId, url: rx.url('/awaited'), events: ['message.posted'] });
  try {
    const [waited, gathering] = await pendingRows(a.accountId, ep.id, 2);
    const claim = new Date(Date.now() + 15_000);
    const read = await claimAndReadDeliveries(h.deps.database.db, [gathering.id], new Date(), claim);
    // While the awaited row's request is at the receiver, another row's close starts gathering;
    // the awaited row's answer comes 2 ms later, inside that gather (GATHER_MS), and must not join it.
    rx.script({ status: 200, delayMs: 2 });
    let gathered: Promise<AttemptOutcome> | undefined;
    void rx.waitFor(1).then(() => {
      gathered = record(h.deps, read.get(gathering.id)!, claim, { status: 200, latencyMs: 3, error: null }, { gathered: true });
    });
    const sent = await queriesDuring(async () => {
      expect(await attemptOne(h.deps, transport, waited.id, 5_000)).toMatchObject({ kind: 'done', status: 'delivered' });
      expect(await gathered).toMatchObject({ kind: 'done', status: 'delivered' });
    });
    expect(sent.filter((q) => q === 'webhook_close_delivered_claims')).toHaveLength(2);
  } finally {
    await rx.close();
  }
});

test('a delivered row\'s attempted_at is when its answer was read, not when the close it shared ran; its endpoint\'s last success is the latest answer', async () => {
  const a = await messagingAccount(h);
  const ep = await createEndpointRow(h, { accountId: a.accountId, createdByUserId: a.owner.userId, url: ok.url('/answered-at'), events: ['message.posted'] });
  const [first, second] = await pendingRows(a.accountId, ep.id, 2);
  const claim = new Date(Date.now() + 15_000);
  const read = await claimAndReadDeliveries(h.deps.database.db, [first.id, second.id], new Date(), claim);
  // Two answers read at times of their own (clocks set apart from the close's), closed by one gathered statement.
  const answeredAt = [new Date(Date.now() - 20_000), new Date(Date.now() - 10_000)];
  const sent = await queriesDuring(async () => {
    const outcomes = await Promise.all([first, second].map((r, i) =>
      record({ ...h.deps, now: () => answeredAt[i] }, read.get(r.id)!, claim, { status: 200, latencyMs: 3, error: null }, { gathered: true })));
    expect(outcomes.map((o) => o.kind === 'done' && o.status)).toEqual(['delivered', 'delivered']);
  });
  expect(sent.filter((q) => q === 'webhook_close_delivered_claims')).toHaveLength(1);
  const rows = await h.deps.database.db.select({ id: webhookDeliveries.id, attemptedAt: webhookDeliveries.attemptedAt })
    .from(webhookDeliveries).where(inArray(webhookDeliveries.id, [first.id, second.id]));
  const at = new Map(rows.map((r) => [r.id, r.attemptedAt?.getTime()]));
  expect([at.get(first.id), at.get(second.id)]).toEqual(answeredAt.map((d) => d.getTime()));
  // The endpoint's last success is the later answer.
  const [endpoint] = await h.deps.database.db.select({ lastSuccessAt: webhookEndpoints.lastSuccessAt }).from(webhookEndpoints).where(eq(webhookEndpoints.id, ep.id));
  expect(endpoint.lastSuccessAt?.getTime()).toBe(answeredAt[1].getTime());
});

test('an endpoint\'s last success and last failure never move back, whichever writer records them (the batch close or a single attempt\'s recordHealth)', async () => {
  const a = await messagingAccount(h);
  const ep = await createEndpointRow(h, { accountId: a.accountId, createdByUserId: a.owner.userId, url: ok.url('/monotonic'), events: ['message.posted'] });
  const [later, earlier] = await pendingRows(a.accountId, ep.id, 2);
  const claim = new Date(Date.now() + 15_000);
  const read = await claimAndReadDeliveries(h.deps.database.db, [later.id, earlier.id], new Date(), claim);
  const laterAt = new Date(Date.now() - 10_000);
  const earlierAt = new Date(Date.now() - 20_000);
  const endpoint = async () => (await h.deps.database.db.select().from(webhookEndpoints).where(eq(webhookEndpoints.id, ep.id)))[0];
  // The later answer's close ends first; a failure streak then starts, so the earlier answer's
  // close must write the endpoint (a success ends the streak) without moving its last success back.
  await record({ ...h.deps, now: () => laterAt }, read.get(later.id)!, claim, { status: 200, latencyMs: 3, error: null }, { gathered: true });
  expect((await endpoint()).lastSuccessAt?.getTime()).toBe(laterAt.getTime());
  await h.deps.database.db.update(webhookEndpoints).set({ failingSince: new Date() }).where(eq(webhookEndpoints.id, ep.id));
  await record({ ...h.deps, now: () => earlierAt }, read.get(earlier.id)!, claim, { status: 200, latencyMs: 3, error: null }, { gathered: true });
  expect(await endpoint()).toMatchObject({ lastSuccessAt: laterAt, failingSince: null });
  // The single attempt's writer follows the same rule.
  await h.deps.database.db.update(webhookEndpoints).set({ failingSince: new Date() }).where(eq(webhookEndpoints.id, ep.id));
  await recordHealth(h.deps.database.db, ep.id, true, earlierAt);
  expect(await endpoint()).toMatchObject({ lastSuccessAt: laterAt, failingSince: null });
  const soon = laterAt.getTime() + SUCCESS_WRITE_EVERY_MS / 2;
  await recordHealth(h.deps.database.db, ep.id, true, new Date(soon));
  expect((await endpoint()).lastSuccessAt?.getTime()).toBe(laterAt.getTime()); // closer than SUCCESS_WRITE_EVERY_MS to the last: not rewritten
  const due = laterAt.getTime() + SUCCESS_WRITE_EVERY_MS * 1.5;
  await recordHealth(h.deps.database.db, ep.id, true, new Date(due));
  expect((await endpoint()).lastSuccessAt?.getTime()).toBe(due);
  await recordHealth(h.deps.database.db, ep.id, false, laterAt);
  await recordHealth(h.deps.database.db, ep.id, false, earlierAt);
  expect(await endpoint()).toMatchObject({ lastFailureAt: laterAt, failingSince: laterAt });
});

test('a delivered row\'s end-to-end latency (event committed → answered) ends at its answer, not at the gathered close after it', async () => {
  const a = await messagingAccount(h);
  const ep = await createEndpointRow(h, { accountId: a.accountId, createdByUserId: a.owner.userId, url: ok.url('/end-to-end'), events: ['message.posted'] });
  const [row] = await pendingRows(a.accountId, ep.id, 1);
  const claim = new Date(Date.now() + 15_000);
  const ctx = (await claimAndReadDeliveries(h.deps.database.db, [row.id], new Date(), claim)).get(row.id)!;
  // Answered 1 s after the event was committed; any later reading of the clock (the close's) a minute on.
  const answeredAt = new Date(ctx.row.eventCreatedAt.getTime() + 1_000);
  let reads = 0;
  const metrics = createMetrics();
  const outcome = await record({ ...h.deps, metrics, now: () => (reads++ === 0 ? answeredAt : new Date(answeredAt.getTime() + 60_000)) }, ctx, claim, { status: 200, latencyMs: 3, error: null }, { gathered: true });
  expect(outcome).toMatchObject({ kind: 'done', status: 'delivered' });
  const values = (await metrics.endToEndSeconds.get()).values;
  expect(values.find((v) => v.metricName === 'teamchat_webhook_end_to_end_seconds_count')?.value).toBe(1);
  expect(values.find((v) => v.metricName === 'teamchat_webhook_end_to_end_seconds_sum')?.value).toBeCloseTo(1, 3);
});

test('a slot freed by a quick 2xx with no row waiting is kept for the account\'s next row (which goes on it without asking Redis), then goes back to Redis; closing gives kept slots back at once', async () => {
  expect(SLOT_KEEP_MS).toBeLessThanOrEqual(100);
  const rx = await startReceiver();
  const a = await messagingAccount(h);
  const ep = await createEndpointRow(h, { accountId: a.accountId, createdByUserId: a.owner.userId, url: rx.url('/kept'), events: ['message.posted'] });
  const [first, second, third] = await pendingRows(a.accountId, ep.id, 3);
  const outcomes: AttemptOutcome[] = [];
  // A longer keep than SLOT_KEEP_MS, so the test's own steps fit in it on a loaded machine.
  const keepMs = 1_000;
  const d = new Dispatcher(h.deps, transport, (o) => outcomes.push(o), { slotKeepMs: keepMs });
  const key = inFlightKey(h.deps.config, a.accountId);
  const { tokens, stop } = sampleLeases(a.accountId);
  try {
    d.submit([first]);
    await eventually(async () => outcomes.length === 1, 10_000, 'the first row recorded');
    // Its attempt is over, and its slot is still held: kept.
    const [kept] = await h.deps.redis.zrange(key, 0, -1);
    expect(kept).toBeDefined();
    d.submit([second]);
    await eventually(async () => outcomes.length === 2, 10_000, 'the second row recorded');
    // The second row went out on the kept slot: Redis never granted another one.
    expect(await h.deps.redis.zrange(key, 0, -1)).toEqual([kept]);
    expect(tokens).toEqual(new Set([kept]));
    // Kept no longer than its time: then it goes back to Redis.
    const keptAt = Date.now();
    await eventually(async () => (await h.deps.redis.zcard(key)) === 0, 5_000, 'the kept slot given back');
    expect(Date.now() - keptAt).toBeGreaterThanOrEqual(keepMs / 2);
    // A closing dispatcher gives its kept slots back at once.
    d.submit([third]);
    await eventually(async () => outcomes.length === 3, 10_000, 'the third row recorded');
    expect(await h.deps.redis.zcard(key)).toBe(1);
    await d.close();
    expect(await h.deps.redis.zcard(key)).toBe(0);
    expect(outcomes.every((o) => o.kind === 'done' && o.status === 'delivered')).toBe(true);
    expect(rx.received).toHaveLength(3);
  } finally {
    await stop();
    await d.close();
    await rx.close();
  }
});

test('a closing dispatcher sends the slots gathering to go back to Redis at once, not after their gather', async () => {
  const a = await messagingAccount(h);
  const ep = await createEndpointRow(h, { accountId: a.accountId, createdByUserId: a.owner.userId, url: ok.url('/drain'), events: ['message.posted'] });
  const [row] = await pendingRows(a.accountId, ep.id, 1);
  const outcomes: AttemptOutcome[] = [];
  // A gather far longer than the test (GATHER_MS is a few ms), and no keeping: the freed slot goes
  // straight to the gathering releases.
  const d = new Dispatcher(h.deps, transport, (o) => outcomes.push(o), { slotKeepMs: 0, releaseGatherMs: 60_000 });
  const key = inFlightKey(h.deps.config, a.accountId);
  try {
    d.submit([row]);
    await eventually(async () => outcomes.length === 1, 10_000, 'the row recorded');
    expect(outcomes[0]).toMatchObject({ kind: 'done', status: 'delivered' });
    // Its slot is still held in Redis: gathering to go back.
    await new Promise((r) => setTimeout(r, 50));
    expect(await h.deps.redis.zcard(key)).toBe(1);
    await d.close();
    expect(await h.deps.redis.zcard(key)).toBe(0);
  } finally {
    await d.close();
  }
});

test('an attempt\'s record chosen as a deadlock victim is run again: the attempt is recorded (failed, its retry scheduled), never left for the sweep to send again', async () => {
  const a = await messagingAccount(h);
  const ep = await createEndpointRow(h, { accountId: a.accountId, createdByUserId: a.owner.userId, url: ok.url('/deadlock'), events: ['message.posted'] });
  const pg = h.deps.database.db;
  const [{ id }] = await pendingRows(a.accountId, ep.id, 1);
  const claim = new Date(Date.now() + 15_000);
  const ctx = (await claimAndReadDeliveries(pg, [id], new Date(), claim)).get(id)!;
  // Another transaction holds the endpoint (as an attempt of it recording or disabling it does)…
  const other = new Client({ connectionString: db.url });
  await other.connect();
  try {
    await other.query('BEGIN');
    await other.query('SELECT 1 FROM webhook_endpoints WHERE id = $1 FOR UPDATE', [ep.id]);
    // …while the record closes the row and then waits for the endpoint (its health) …
    const recorded = record(h.deps, ctx, claim, { status: 500, latencyMs: 12, error: null });
    await new Promise((r) => setTimeout(r, 300));
    // … and the other one then waits for the row: a cycle; PostgreSQL aborts the first waiter (the record).
    const otherDone = other.query('UPDATE webhook_deliveries SET error = error WHERE id = $1', [id]).then(() => other.query('COMMIT'));
    const outcome = await recorded;
    await otherDone;
    expect(outcome).toMatchObject({ kind: 'done', status: 'failed', responseStatus: 500 });
    const rows = await deliveriesOf(h, ep.id);
    expect(rows.map((r) => r.status).sort()).toEqual(['failed', 'retrying']);
  } finally {
    await other.end();
  }
});

test('rows claimed ahead of their slots go out on their claim\'s read while it is fresh (CLAIM_AHEAD_FRESH_MS); an older one is claimed and read again, so an endpoint disabled meanwhile is seen', async () => {
  const a = await messagingAccount(h);
  const ep = await createEndpointRow(h, { accountId: a.accountId, createdByUserId: a.owner.userId, url: ok.url('/ahead'), events: ['message.posted'] });
  const [first, second, third] = await pendingRows(a.accountId, ep.id, 3);
  const claims = new ClaimsAhead();
  const claimOf = async (id: string) => (await deliveriesOf(h, ep.id)).find((r) => r.id === id)!.claimedUntil;

  // The first row's pipeline claims the next two ahead, in its own claim statement; they are
  // known as claimed ahead at once, before the statement runs (a pipeline started meanwhile
  // must not claim them too).
  const starting = runPipeline(h.deps, transport, [first.id], undefined, { claims, next: [second, third].map((r) => ({ id: r.id, accountId: a.accountId })) });
  expect(claims.has(second.id) && claims.has(third.id)).toBe(true);
  const [one] = await starting;
  expect(await one).toMatchObject({ kind: 'done', status: 'delivered' });
  expect(claims.countOf(a.accountId)).toBe(2);
  const held = await claimOf(second.id);
  expect(held).not.toBeNull();
  expect(await claimOf(third.id)).toEqual(held);

  // Fresh: sent on the read the claim made, under that same claim (no second claim).
  const [two] = await runPipeline(h.deps, transport, [second.id], undefined, { claims, next: [] });
  expect(await two).toMatchObject({ kind: 'done', status: 'delivered' });
  expect(ok.received.filter((r) => r.path === '/ahead')).toHaveLength(2);

  // Grown old, with the endpoint disabled meanwhile: its claim is given back, the row claimed
  // and read again, and the rule drops it unsent.
  await new Promise((r) => setTimeout(r, CLAIM_AHEAD_FRESH_MS + 50));
  await h.deps.database.db.update(webhookEndpoints).set({ enabled: false, disabledReason: 'manual' }).where(eq(webhookEndpoints.id, ep.id));
  const [three] = await runPipeline(h.deps, transport, [third.id], undefined, { claims, next: [] });
  expect(await three).toMatchObject({ kind: 'done', status: 'dead', error: 'dropped: endpoint disabled (manual)' });
  expect(ok.received.filter((r) => r.path === '/ahead')).toHaveLength(2);
  expect(claims.countOf(a.accountId)).toBe(0);
});

test('a dispatcher claims ahead only for an endpoint whose last answer was quick, at most CLAIMS_AHEAD_PER_SLOT times its account\'s share, and gives those claims back when it closes', async () => {
  const rx = await startReceiver();
  const a = await messagingAccount(h);
  const ep = await createEndpointRow(h, { accountId: a.accountId, createdByUserId: a.owner.userId, url: rx.url('/share'), events: ['message.posted'] });
  const outcomes: AttemptOutcome[] = [];
  const d = new Dispatcher(h.deps, transport, (o) => outcomes.push(o));
  const claimedUnsent = async () => (await deliveriesOf(h, ep.id)).filter((r) => r.status === 'pending' && r.claimedUntil !== null && r.attemptedAt === null).length;
  try {
    // Quick answers first: the endpoint is known quick.
    d.submit(await pendingRows(a.accountId, ep.id, 4));
    await eventually(async () => outcomes.length === 4, 10_000, 'four quick answers recorded');
    // Their slots, kept for the account's next rows (SLOT_KEEP_MS), back in Redis: the next rows
    // get all four slots in one ask, so the claims ahead are made in one pipeline.
    await slotsReturned(a.accountId);
    // Then the receiver holds its answers: four rows on the wire, the next eight (twice the share) claimed ahead, the rest unclaimed.
    rx.fallback = { hang: true };
    d.submit(await pendingRows(a.accountId, ep.id, 20));
    await eventually(async () => rx.inFlight === 4, 10_000, 'four attempts on the wire');
    await eventually(async () => (await claimedUnsent()) === 4 + 4 * CLAIMS_AHEAD_PER_SLOT, 5_000, 'four on the wire and eight claimed ahead');
    // On close the claims ahead go back; the hung attempts time out and record themselves.
    await d.close();
    expect(await claimedUnsent()).toBe(0);
  } finally {
    rx.fallback = { status: 200 };
    await d.close();
    await rx.close();
  }
});

test('a fan-out\'s write claims ahead only rows within CLAIMS_AHEAD_PER_SLOT times the share of the head of their lane: behind a longer queue a row is left unclaimed, and the rows at the head stay claimed ahead', async () => {
  const rx = await startReceiver();
  const a = await messagingAccount(h);
  const ep = await createEndpointRow(h, { accountId: a.accountId, createdByUserId: a.owner.userId, url: rx.url('/queued'), events: ['message.posted'] });
  const outcomes: AttemptOutcome[] = [];
  const d = new Dispatcher(h.deps, transport, (o) => outcomes.push(o));
  const ahead = (d as unknown as { ahead: ClaimsAhead }).ahead;
  try {
    // A quick answer: the endpoint is known quick.
    d.submit(await pendingRows(a.accountId, ep.id, 1));
    await eventually(async () => outcomes.length === 1 && d.stats().inFlight === 0, 10_000, 'the quick answer recorded');
    await slotsReturned(a.accountId);
    // Then its receiver holds its answers: four rows on the wire, the next eight claimed ahead,
    // and twelve more waiting in the lane: a queue longer than twice the share.
    rx.fallback = { hang: true };
    d.submit(await pendingRows(a.accountId, ep.id, 24));
    await eventually(async () => rx.inFlight === 4 && ahead.countOf(a.accountId) === CLAIMS_AHEAD_PER_SLOT * 4, 10_000, 'four on the wire, eight claimed ahead');
    // Two rows claimed ahead are taken out (their slots came): room under the account's budget,
    // but a new row would wait behind twenty: claimed at the write it would be stale long before
    // its slot came, and hold a place the rows at the head need.
    for (const id of (await pendingIdsClaimed(ep.id)).filter((i) => ahead.has(i)).slice(0, 2)) void ahead.take(id);
    expect(ahead.countOf(a.accountId)).toBe(CLAIMS_AHEAD_PER_SLOT * 4 - 2);
    const picked = d.claimable([{ id: 'delivery_queued_a', accountId: a.accountId, endpointId: ep.id }, { id: 'delivery_queued_b', accountId: a.accountId, endpointId: ep.id }]);
    expect(picked.ids.size).toBe(0);
    picked.release();
  } finally {
    rx.fallback = { status: 200 };
    await d.close();
    await rx.close();
  }
});

/** Resolves once Redis holds none of the account's in-flight slots (those kept for its next rows went back). */
async function slotsReturned(accountId: string): Promise<void> {
  await eventually(async () => (await h.deps.redis.zcard(inFlightKey(h.deps.config, accountId))) === 0, 5_000, 'the kept slots back in Redis');
}

/** Open rows of the endpoint under a claim and not yet attempted (on the wire, or claimed ahead). */
async function pendingIdsClaimed(endpointId: string): Promise<string[]> {
  return (await deliveriesOf(h, endpointId)).filter((r) => r.status === 'pending' && r.claimedUntil !== null && r.attemptedAt === null).map((r) => r.id);
}

/** A fan-out of `eventIds` as the engine makes it (fanout-worker.ts): the rows `d` would give a slot at once claimed in the write. */
async function fanOutClaiming(d: Dispatcher, eventIds: string[]) {
  const plan = await planFanOut(h.deps, eventIds);
  const picked = d.claimable(plan.rows);
  const written = await writeFanOut(h.deps, plan, { ids: picked.ids, until: new Date(Date.now() + 15_000) });
  return { plan, ids: picked.ids, release: picked.release, rows: written.rows, held: written.claimed };
}

test('rows claimed at the fan-out\'s write (as many as the account\'s free slots) go out on the write\'s read while it is fresh; the others, and any grown old, are claimed and read again', async () => {
  const a = await messagingAccount(h);
  const ch = await makeChannel(a.ownerApi);
  const ep = await createEndpointRow(h, { accountId: a.accountId, createdByUserId: a.owner.userId, url: ok.url('/at-write'), events: ['message.posted'] });
  for (let i = 0; i < 6; i += 1) await post(a.ownerApi, ch, { text: `at the write ${i}` });
  const outcomes: AttemptOutcome[] = [];
  const d = new Dispatcher(h.deps, transport, (o) => outcomes.push(o));
  const disable = () => h.deps.database.db.update(webhookEndpoints).set({ enabled: false, disabledReason: 'manual' }).where(eq(webhookEndpoints.id, ep.id));
  try {
    const fresh = await fanOutClaiming(d, await postedIds(a.accountId));
    // A lane not seen yet counts the smallest cap: 4 of the 6 rows are claimed in the write.
    expect(fresh.ids.size).toBe(4);
    expect(fresh.held.size).toBe(4);
    // Disabled after the write: the 4 claimed rows go on the write's read (as a claim ahead does);
    // the other 2 are claimed and read by their pipeline, which sees the endpoint disabled.
    await disable();
    expect(d.submit(fresh.rows, fresh.held)).toBe(6);
    fresh.release();
    await eventually(async () => outcomes.length === 6, 10_000, 'six outcomes');
    const byId = new Map(outcomes.map((o) => [o.deliveryId, o]));
    for (const r of fresh.rows) {
      expect(byId.get(r.id)).toMatchObject(fresh.ids.has(r.id) ? { kind: 'done', status: 'delivered' } : { kind: 'done', status: 'dead', error: 'dropped: endpoint disabled (manual)' });
    }
    expect(ok.received.filter((r) => r.path === '/at-write')).toHaveLength(4);

    // Grown old before its slot came: given back, claimed and read again, and dropped.
    await h.deps.database.db.update(webhookEndpoints).set({ enabled: true, disabledReason: null }).where(eq(webhookEndpoints.id, ep.id));
    await post(a.ownerApi, ch, { text: 'old claim' });
    const later = (await postedIds(a.accountId)).filter((id) => !fresh.plan.eventIds.includes(id));
    const old = await fanOutClaiming(d, later);
    expect(old.held.size).toBe(1);
    await new Promise((r) => setTimeout(r, CLAIM_AHEAD_FRESH_MS + 50));
    await disable();
    outcomes.length = 0;
    d.submit(old.rows, old.held);
    old.release();
    await eventually(async () => outcomes.length === 1, 10_000, 'the old claim\'s outcome');
    expect(outcomes[0]).toMatchObject({ kind: 'done', status: 'dead' });
    expect(ok.received.filter((r) => r.path === '/at-write')).toHaveLength(4);
  } finally {
    await d.close();
  }
});

test('no row is claimed at the write for an endpoint being probed; claims a dispatcher does not take (it is closing) go back', async () => {
  const rx = await startReceiver();
  const a = await messagingAccount(h);
  const failing = await createEndpointRow(h, { accountId: a.accountId, createdByUserId: a.owner.userId, url: rx.url('/probed'), events: ['message.posted'] });
  const other = await createEndpointRow(h, { accountId: a.accountId, createdByUserId: a.owner.userId, url: ok.url('/not-probed'), events: ['message.posted'] });
  const outcomes: AttemptOutcome[] = [];
  const d = new Dispatcher(h.deps, transport, (o) => outcomes.push(o));
  try {
    rx.fallback = { status: 500 };
    d.submit(await pendingRows(a.accountId, failing.id, 1));
    await eventually(async () => outcomes.length === 1, 10_000, 'the failure recorded');
    const rows = [{ id: 'delivery_probed', accountId: a.accountId, endpointId: failing.id }, { id: 'delivery_other', accountId: a.accountId, endpointId: other.id }];
    const picked = d.claimable(rows);
    expect([...picked.ids]).toEqual(['delivery_other']);
    picked.release();

    const ch = await makeChannel(a.ownerApi);
    await post(a.ownerApi, ch, { text: 'claimed, then not taken' });
    const { rows: written, held } = await fanOutClaiming(d, await postedIds(a.accountId));
    expect(held.size).toBe(1);
    await d.close();
    expect(d.submit(written, held)).toBe(0);
    await eventually(async () => (await deliveriesOf(h, other.id)).every((r) => r.claimedUntil === null), 5_000, 'the claim given back');
  } finally {
    await d.close();
    await rx.close();
  }
});

test('fan-outs side by side claim no more at their writes than the account\'s free slots between them: the rows chosen stay reserved until released', () => {
  const d = new Dispatcher(h.deps, transport, () => undefined);
  const rowsOf = (accountId: string, n: number, tag: string) => Array.from({ length: n }, (_, i) => ({ id: `delivery_${tag}${i}`, accountId, endpointId: 'webhook_x' }));
  const one = d.claimable(rowsOf('acct_reserve', 6, 'a'));
  expect(one.ids.size).toBe(4); // an account with no lane here counts the smallest cap
  const two = d.claimable(rowsOf('acct_reserve', 6, 'b'));
  expect(two.ids.size).toBe(0); // its free slots are reserved by the first write, still under way
  expect(d.claimable(rowsOf('acct_other', 2, 'c')).ids.size).toBe(2); // another account's are its own
  one.release();
  one.release(); // a second release changes nothing
  two.release();
  expect(d.claimable(rowsOf('acct_reserve', 6, 'd')).ids.size).toBe(4);
});

test('for an endpoint whose last answer was quick, rows beyond the free slots are claimed at the write too, up to CLAIMS_AHEAD_PER_SLOT times the share, and go out on the write\'s read while it is fresh', async () => {
  const a = await messagingAccount(h);
  const ch = await makeChannel(a.ownerApi);
  const ep = await createEndpointRow(h, { accountId: a.accountId, createdByUserId: a.owner.userId, url: ok.url('/ahead-at-write'), events: ['message.posted'] });
  const { d, outcomes } = dispatcher();
  try {
    // One quick 2xx makes the endpoint quick (RecentAnswers).
    d.submit(await pendingRows(a.accountId, ep.id, 1));
    await eventually(async () => outcomes.length === 1 && d.stats().inFlight === 0, 10_000, 'the first answer');
    expect(outcomes[0]).toMatchObject({ kind: 'done', status: 'delivered' });
    outcomes.length = 0;

    for (let i = 0; i < 14; i += 1) await post(a.ownerApi, ch, { text: `ahead at the write ${i}` });
    const written = await fanOutClaiming(d, await postedIds(a.accountId));
    // 4 free slots (the smallest cap) and 2 × 4 rows claimed ahead: 12 of the 14.
    expect(written.ids.size).toBe(4 + CLAIMS_AHEAD_PER_SLOT * 4);
    expect(written.held.size).toBe(12);
    // Disabled after the write: the 12 go on the write's read; the other 2 are read under their slots and dropped.
    await h.deps.database.db.update(webhookEndpoints).set({ enabled: false, disabledReason: 'manual' }).where(eq(webhookEndpoints.id, ep.id));
    expect(d.submit(written.rows, written.held)).toBe(14);
    written.release();
    await eventually(async () => outcomes.length === 14, 10_000, 'fourteen outcomes');
    const byId = new Map(outcomes.map((o) => [o.deliveryId, o]));
    for (const r of written.rows) {
      expect(byId.get(r.id)).toMatchObject(written.ids.has(r.id) ? { kind: 'done', status: 'delivered' } : { kind: 'done', status: 'dead' });
    }
    expect(ok.received.filter((r) => r.path === '/ahead-at-write')).toHaveLength(13);
    // Rows claimed ahead are not in flight: the account's cap (4) held on the wire throughout (spec: Limits).
    expect(ok.maxInFlightByPath.get('/ahead-at-write')).toBeLessThanOrEqual(4);
  } finally {
    await d.close();
  }
});
