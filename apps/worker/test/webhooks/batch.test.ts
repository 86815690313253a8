import { SharedRounds, WebhookTransport, vetWebhookUrl, acquireInFlightSlots, chargeDeliveryUnits, closeDelivered, refundDeliveryUnits, fanOutAndDeliver, getMemberByEmail, isRetryableConflict, newId, unitsKey } from '@teamchat/core';
import { eq, inArray, webhookBodies, webhookDeliveries, webhookEndpoints } from '@teamchat/db';
import { createMigratedDatabase, dropDatabase } from '../../../../test/support/databases';
import type { Harness } from '../../../../test/support/harness';
import { startReceiver, type Receiver } from '../../../../test/support/https-receiver';
import { addToChannel, eventsOf, makeChannel, memberCaller, messagingAccount, post } from '../../../../test/support/messaging';
import { TEST_TIMEOUT_MS, createEndpointRow, deliveriesOf, eventually, startWebhookHarness } from '../../../../test/support/webhooks';

/**
 * Issue 11, the fan-out job's first attempts in rounds (core batch.ts), called directly: no
 * worker runs in this file. A round waits for its answers only up to BATCH_SLOW_MS; an attempt
 * still open then (a hanging receiver) finishes and records on its own, keeping its claim and
 * its in-flight slot, while the batch's later rounds go on. A database of its own: another file's
 * worker (e.g. the whole service started by test/start.test.ts) relays every account's events in
 * the run's database, and would fan out this file's events before the test does.
 */
jest.setTimeout(30_000);

let db: { name: string; url: string };
let h: Harness;
let hang: Receiver;
let ok: Receiver;
let transport: WebhookTransport;
beforeAll(async () => {
  db = await createMigratedDatabase('teamchat_whbatch');
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

test('a hanging receiver does not hold up the batch: the other account\'s later rounds go on, the hung attempt records itself', async () => {
  const x = await messagingAccount(h);
  const y = await messagingAccount(h);
  const xc = await makeChannel(x.ownerApi);
  const yc = await makeChannel(y.ownerApi);
  const hung = await createEndpointRow(h, { accountId: x.accountId, createdByUserId: x.owner.userId, url: hang.url('/hang'), events: ['message.posted'] });
  const fine = await createEndpointRow(h, { accountId: y.accountId, createdByUserId: y.owner.userId, url: ok.url('/ok'), events: ['message.posted'] });
  await post(x.ownerApi, xc, { text: 'to a receiver that never answers' });
  for (let i = 0; i < 8; i++) await post(y.ownerApi, yc, { text: `to a healthy receiver ${i}` }); // cap 4: two rounds
  const ids = [...(await eventsOf(h, x.accountId)), ...(await eventsOf(h, y.accountId))].filter((e) => e.type === 'message.posted').map((e) => e.id);

  const started = Date.now();
  const outcome = await fanOutAndDeliver(h.deps, transport, ids);
  const took = Date.now() - started;

  const arrivals = ok.received.filter((r) => r.path === '/ok');
  expect(arrivals).toHaveLength(8);
  // Both rounds of the healthy account arrived long before the hung attempt's timeout.
  expect(Math.max(...arrivals.map((r) => r.at)) - started).toBeLessThan(TEST_TIMEOUT_MS - 500);
  // The batch ended only after the hung attempt did, and recorded it: failed, its retry scheduled.
  expect(took).toBeGreaterThanOrEqual(TEST_TIMEOUT_MS - 100);
  expect(outcome).toMatchObject({ rows: 9, delivered: 8 });
  const xRows = await deliveriesOf(h, hung.id);
  expect(xRows.map((r) => r.status).sort()).toEqual(['failed', 'retrying']);
  expect(outcome.jobs.map((j) => j.id)).toContain(xRows.find((r) => r.status === 'retrying')!.id);
  expect((await deliveriesOf(h, fine.id)).every((r) => r.status === 'delivered')).toBe(true);
});

test('each attempt of a batch spends one call unit on the seat of the endpoint\'s creator, and only there', async () => {
  expect(h.deps.config.limitsEnabled).toBe(true);
  const a = await messagingAccount(h);
  const ch = await makeChannel(a.ownerApi);
  const poster = await memberCaller(h, a.accountId);
  await addToChannel(a.ownerApi, ch, poster.identityId);
  const posterUserId = (await getMemberByEmail(h.deps.database.db, a.accountId, poster.email))!.userId;
  await createEndpointRow(h, { accountId: a.accountId, createdByUserId: a.owner.userId, url: ok.url('/units'), events: ['message.posted'] });
  for (let i = 0; i < 6; i++) await post(poster, ch, { text: `charged to the creator ${i}` }); // cap 4: two rounds
  const ids = (await eventsOf(h, a.accountId)).filter((e) => e.type === 'message.posted').map((e) => e.id);
  const now = h.deps.now();
  const used = async (userId: string) => Number(await h.deps.redis.get(unitsKey(h.deps.config.redisPrefix, a.accountId, userId, now)) ?? 0);
  const [creatorBefore, posterBefore] = [await used(a.owner.userId), await used(posterUserId)];

  const outcome = await fanOutAndDeliver(h.deps, transport, ids);
  expect(outcome).toMatchObject({ rows: 6, delivered: 6, jobs: [] });
  expect(await used(a.owner.userId)).toBe(creatorBefore + 6);
  expect(await used(posterUserId)).toBe(posterBefore);
});

test('batches running at once share the process\'s rounds: the account\'s in-flight cap holds across them and every row is delivered by them, none left claimed', async () => {
  const a = await messagingAccount(h);
  const ch = await makeChannel(a.ownerApi);
  const ep = await createEndpointRow(h, { accountId: a.accountId, createdByUserId: a.owner.userId, url: ok.url('/shared'), events: ['message.posted'] });
  for (let i = 0; i < 12; i++) await post(a.ownerApi, ch, { text: `shared rounds ${i}` });
  const ids = (await eventsOf(h, a.accountId)).filter((e) => e.type === 'message.posted').map((e) => e.id);
  ok.fallback = { status: 200, delayMs: 60 };
  ok.maxInFlight = 0;
  try {
    // Three batches of 4 at once on one account whose cap is 4: only one can have its first
    // round; the others' rows wait in the shared rounds for the slots it gives back.
    const outcomes = await Promise.all([ids.slice(0, 4), ids.slice(4, 8), ids.slice(8)].map((part) => fanOutAndDeliver(h.deps, transport, part)));
    expect(outcomes.reduce((n, o) => n + o.delivered, 0)).toBe(12);
    expect(outcomes.flatMap((o) => o.jobs)).toEqual([]);
  } finally {
    ok.fallback = { status: 200 };
  }
  expect(ok.maxInFlight).toBeLessThanOrEqual(4);
  const rows = await deliveriesOf(h, ep.id);
  expect(rows).toHaveLength(12);
  expect(rows.every((r) => r.status === 'delivered' && r.claimedUntil === null && r.attempt === 1)).toBe(true);
  expect(ok.received.filter((r) => r.path === '/shared')).toHaveLength(12);
});

test('rows a batch hands on without an attempt get its claim back, so their jobs can take them at once', async () => {
  const x = await messagingAccount(h);
  const xc = await makeChannel(x.ownerApi);
  const hung = await createEndpointRow(h, { accountId: x.accountId, createdByUserId: x.owner.userId, url: hang.url('/hang-many'), events: ['message.posted'] });
  for (let i = 0; i < 6; i++) await post(x.ownerApi, xc, { text: `to a receiver that never answers ${i}` }); // cap 4: two wait
  const ids = (await eventsOf(h, x.accountId)).filter((e) => e.type === 'message.posted').map((e) => e.id);

  const outcome = await fanOutAndDeliver(h.deps, transport, ids);

  const rows = await deliveriesOf(h, hung.id);
  const firsts = rows.filter((r) => r.attempt === 1);
  expect(firsts).toHaveLength(6);
  // Four were attempted (they hung until the timeout): failed, each with its retry row.
  expect(firsts.filter((r) => r.status === 'failed')).toHaveLength(4);
  expect(rows.filter((r) => r.attempt === 2 && r.status === 'retrying')).toHaveLength(4);
  // Two never got a slot; their endpoint was handed off: open, unclaimed, handed on as jobs.
  const waited = firsts.filter((r) => r.status === 'pending');
  expect(waited).toHaveLength(2);
  expect(waited.every((r) => r.claimedUntil === null)).toBe(true);
  const jobIds = outcome.jobs.map((j) => j.id);
  for (const r of waited) expect(jobIds).toContain(r.id);
  expect(outcome.delivered).toBe(0);
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
    const closes = Array.from({ length: 16 }, () => shuffled([...eps, ...eps, ...eps, ...eps]).map((endpointId) => ({ id: newId('delivery'), endpointId })));
    await db.insert(webhookDeliveries).values(closes.flat().map((r) => ({
      id: r.id, chainId: r.id, attempt: 1, status: 'pending', kind: 'event', accountId: a.accountId, endpointId: r.endpointId,
      eventId: newId('event'), eventType: 'message.posted', bodyId, eventCreatedAt: new Date(), claimedUntil: claim,
    })));
    await db.update(webhookEndpoints).set({ failingSince: new Date(), lastSuccessAt: null }).where(inArray(webhookEndpoints.id, eps));
    const now = h.deps.now();
    const results = await Promise.all(closes.map((rows) => closeDelivered(db, { now, rows: rows.map((r) => ({ deliveryId: r.id, claim, responseStatus: 200, latencyMs: 3 })) })));
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

test('a deadlock or serialization failure is a conflict to run again; other errors are not', () => {
  expect(isRetryableConflict(Object.assign(new Error('deadlock detected'), { code: '40P01' }))).toBe(true);
  expect(isRetryableConflict(Object.assign(new Error('could not serialize access'), { code: '40001' }))).toBe(true);
  expect(isRetryableConflict(Object.assign(new Error('unique violation'), { code: '23505' }))).toBe(false);
  expect(isRetryableConflict(new Error('connection terminated'))).toBe(false);
});

test('rows that waited for a slot are not sent once their endpoint was disabled meanwhile: the round reads endpoints again before it sends', async () => {
  const a = await messagingAccount(h);
  const ch = await makeChannel(a.ownerApi);
  const ep = await createEndpointRow(h, { accountId: a.accountId, createdByUserId: a.owner.userId, url: ok.url('/disabled-meanwhile'), events: ['message.posted'] });
  for (let i = 0; i < 3; i++) await post(a.ownerApi, ch, { text: `waits for a slot ${i}` });
  const ids = (await eventsOf(h, a.accountId)).filter((e) => e.type === 'message.posted').map((e) => e.id);
  // Every slot of the account is held elsewhere: the batch's rows wait in the shared rounds.
  const held = await acquireInFlightSlots(h.deps, new Map([[a.accountId, 4]]), 30_000);
  expect(held.count(a.accountId)).toBe(4);
  const units = async () => Number(await h.deps.redis.get(unitsKey(h.deps.config.redisPrefix, a.accountId, a.owner.userId, h.deps.now())) ?? 0);
  const unitsBefore = await units();
  const running = fanOutAndDeliver(h.deps, transport, ids);
  await eventually(async () => (await deliveriesOf(h, ep.id)).length === 3, 5_000, 'the fan-out wrote its rows');
  await h.deps.database.db.update(webhookEndpoints).set({ enabled: false, disabledReason: 'manual' }).where(eq(webhookEndpoints.id, ep.id));
  await held.release();

  const outcome = await running;
  expect(ok.received.filter((r) => r.path === '/disabled-meanwhile')).toHaveLength(0);
  expect(outcome.delivered).toBe(0);
  const rows = await deliveriesOf(h, ep.id);
  expect(outcome.jobs.map((j) => j.id).sort()).toEqual(rows.map((r) => r.id).sort());
  // Handed on unclaimed, for the single path to drop.
  expect(rows.every((r) => r.status === 'pending' && r.claimedUntil === null)).toBe(true);
  // The round charged their units while it read the endpoint again: given back, as nothing was sent.
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
  expect(a2.shares.get(a.accountId)).toBe(2); // the share Redis answers, which the shared rounds keep to
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

test('a lease group carried to the next round keeps only leases with a whole claim time left, and gives back the rest', async () => {
  const a = await messagingAccount(h);
  const g = await acquireInFlightSlots(h.deps, new Map([[a.accountId, 4]]), 2_000);
  expect(g.count(a.accountId)).toBe(4);
  // Leases taken for 2 s cannot carry an attempt that may need 5 s: none is kept.
  const none = g.take(new Map([[a.accountId, 4]]), 5_000);
  expect(none.count(a.accountId)).toBe(0);
  const two = g.take(new Map([[a.accountId, 2]]), 1_000);
  expect(two.count(a.accountId)).toBe(2);
  expect(g.count(a.accountId)).toBe(2);
  await g.release();
  // The two given back are free again; the two carried are still held.
  const other = await acquireInFlightSlots(h.deps, new Map([[a.accountId, 4]]), 30_000, 'procOther');
  expect(other.count(a.accountId)).toBe(2);
  await Promise.all([two.release(), other.release()]);
});

test('units a round gives back go to the UTC day they were charged on: a refund after midnight never adds to the new day', async () => {
  const a = await messagingAccount(h);
  const seat = { accountId: a.accountId, plan: 'scale', seatUserId: a.owner.userId, units: 3 };
  const day1 = new Date('2031-03-04T23:59:59.900Z');
  const day2 = new Date('2031-03-05T00:00:00.100Z');
  const used = async (at: Date) => Number(await h.deps.redis.get(unitsKey(h.deps.config.redisPrefix, a.accountId, a.owner.userId, at)) ?? 0);
  h.clock.set(day1);
  try {
    const [charged] = await chargeDeliveryUnits(h.deps, [seat], day1);
    expect(charged.allowed).toBe(true);
    expect(await used(day1)).toBe(3);
    h.clock.set(day2); // midnight passes between the charge and the refund
    await refundDeliveryUnits(h.deps, [seat], day1);
    expect(await used(day1)).toBe(0);
    expect(await used(day2)).toBe(0);
  } finally {
    h.clock.reset();
  }
});

describe('a round on the wire and the slots that come free meanwhile', () => {
  let slow: Receiver;
  beforeAll(async () => {
    slow = await startReceiver();
    slow.fallback = { status: 200, delayMs: 400 };
  });
  afterAll(async () => {
    await slow.close();
  });

  /**
   * Account Y's endpoint answers in 400 ms, X's at once. Y's batch has 8 rows (cap 4): its first
   * round, then a shared round R of 4 that is on the wire for 400 ms. X's batch of 8 starts while
   * R is on the wire: its first round answers at once and frees X's 4 slots. Answers when X's
   * rows and R's rows reached their receivers.
   */
  async function scenario(rounds: SharedRounds) {
    const x = await messagingAccount(h);
    const y = await messagingAccount(h);
    const xc = await makeChannel(x.ownerApi);
    const yc = await makeChannel(y.ownerApi);
    const tag = newId('event');
    await createEndpointRow(h, { accountId: x.accountId, createdByUserId: x.owner.userId, url: ok.url(`/merge-x-${tag}`), events: ['message.posted'] });
    await createEndpointRow(h, { accountId: y.accountId, createdByUserId: y.owner.userId, url: slow.url(`/merge-y-${tag}`), events: ['message.posted'] });
    for (let i = 0; i < 8; i++) await post(x.ownerApi, xc, { text: `fast ${i}` });
    for (let i = 0; i < 8; i++) await post(y.ownerApi, yc, { text: `slow ${i}` });
    const idsOf = async (accountId: string) => (await eventsOf(h, accountId)).filter((e) => e.type === 'message.posted').map((e) => e.id);
    const [xIds, yIds] = [await idsOf(x.accountId), await idsOf(y.accountId)];
    const yArrivals = () => slow.received.filter((r) => r.path === `/merge-y-${tag}`);
    const yBatch = fanOutAndDeliver(h.deps, transport, yIds, rounds);
    await eventually(async () => yArrivals().length > 4, 5_000, 'Y\'s shared round is on the wire');
    const xOutcome = await fanOutAndDeliver(h.deps, transport, xIds, rounds);
    const yOutcome = await yBatch;
    expect([xOutcome.delivered, yOutcome.delivered]).toEqual([8, 8]);
    const roundSentAt = Math.min(...yArrivals().slice(4).map((r) => r.at));
    const xAt = ok.received.filter((r) => r.path === `/merge-x-${tag}`).map((r) => r.at).sort((p, q) => p - q);
    expect(xAt).toHaveLength(8);
    return { roundSentAt, xAt };
  }

  test('a slow round on the wire holds nobody else\'s slots: the other account\'s rows go out before its answers', async () => {
    const { roundSentAt, xAt } = await scenario(new SharedRounds(h.deps, transport));
    // R answers 400 ms after it was sent; X's freed slots waited at most MERGE_WAIT_MS for it.
    expect(Math.max(...xAt) - roundSentAt).toBeLessThan(300);
  });

  test('slots freed while a young round is on the wire wait for its answers and go out in the next round', async () => {
    // A merge window longer than R's 400 ms: X's freed slots wait for R's answers, then go together.
    const { roundSentAt, xAt } = await scenario(new SharedRounds(h.deps, transport, { mergeWaitMs: 5_000 }));
    expect(xAt.slice(4).every((at) => at - roundSentAt >= 350)).toBe(true);
  });
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
