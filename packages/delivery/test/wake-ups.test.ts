import {
  ACCOUNT_WAKE_UP_AHEAD_MS, ACCOUNT_WAKE_UP_COARSE_AHEAD_MS, ACCOUNT_WAKE_UP_COARSE_STEP_MS, Dispatcher, LANE_AGES_FORGOTTEN_MS, LANE_AGES_STALE_MS, WebhookQueues, WebhookTransport, fanOutEvents, overdueAccounts,
  publishLaneAges, readLaneAges, webhookMaintenance, type AttemptOutcome,
} from '../src';
import { laneAgesKey } from '@teamchat/core';
import { accounts, eq, inArray, webhookDeliveries } from '@teamchat/db';
import { createMigratedDatabase, dropDatabase } from '../../../test/support/databases';
import type { Harness } from '../../../test/support/harness';
import { startReceiver, type Receiver } from '../../../test/support/https-receiver';
import { eventsOf, makeChannel, messagingAccount, post } from '../../../test/support/messaging';
import { createEndpointRow, deliveriesOf, eventually, startWebhookHarness } from '../../../test/support/webhooks';

/**
 * Wake-ups (docs/webhooks.md "Wake-ups"): a retry due ahead wakes its account for its second
 * (one job for all the account's retries of that second), and the dispatcher that takes it reads
 * the account's due rows from the database; the sweep wakes the accounts whose rows are overdue.
 * A database of its own, and no worker: the dispatcher is called directly.
 */
jest.setTimeout(30_000);

let db: { name: string; url: string };
let h: Harness;
let ok: Receiver;
let transport: WebhookTransport;
let queues: WebhookQueues;
beforeAll(async () => {
  db = await createMigratedDatabase('teamchat_whwake');
  h = await startWebhookHarness({ databaseUrl: db.url });
  ok = await startReceiver();
  transport = new WebhookTransport(h.deps.config);
  queues = new WebhookQueues(h.deps);
});
afterAll(async () => {
  await queues.close();
  await transport.close();
  await ok.close();
  await h.close();
  await dropDatabase(db.name);
});

/** An account with an endpoint on the healthy receiver and `n` open first deliveries (pending, due now). */
async function accountWithRows(n: number, path: string) {
  const a = await messagingAccount(h);
  const ch = await makeChannel(a.ownerApi);
  const ep = await createEndpointRow(h, { accountId: a.accountId, createdByUserId: a.owner.userId, url: ok.url(path), events: ['message.posted'] });
  for (let i = 0; i < n; i++) await post(a.ownerApi, ch, { text: `wake ${i}` });
  const eventIds = (await eventsOf(h, a.accountId)).filter((e) => e.type === 'message.posted').map((e) => e.id);
  const rows = await fanOutEvents(h.deps, eventIds);
  expect(rows).toHaveLength(n);
  return { accountId: a.accountId, endpointId: ep.id, ids: rows.map((r) => r.id) };
}

function dispatcher(maxWaitingPerAccount?: number) {
  const outcomes: AttemptOutcome[] = [];
  const d = new Dispatcher(h.deps, transport, (o) => outcomes.push(o), { maxWaitingPerAccount });
  return { d, outcomes };
}

test('a retry due ahead wakes its account for its second: one job for all the account\'s retries of that second; a retry due sooner keeps a job of its own', async () => {
  const now = h.deps.now().getTime();
  const second = Math.ceil((now + 60_000) / 1000) * 1000;
  await queues.scheduleRetries([
    { id: 'dlv_wake_a1', accountId: 'acc_wake_a', at: new Date(second - 400) },
    { id: 'dlv_wake_a2', accountId: 'acc_wake_a', at: new Date(second - 100) },
    { id: 'dlv_wake_a3', accountId: 'acc_wake_a', at: new Date(second + 500) },
    { id: 'dlv_wake_b1', accountId: 'acc_wake_b', at: new Date(second - 100) },
    { id: 'dlv_wake_soon', accountId: 'acc_wake_a', at: new Date(now + ACCOUNT_WAKE_UP_AHEAD_MS - 1000) },
  ]);
  // Again, as a second failure in the same second would: nothing new.
  await queues.scheduleRetries([{ id: 'dlv_wake_a4', accountId: 'acc_wake_a', at: new Date(second - 50) }]);
  const delayed = await queues.delivery.getJobs(['delayed']);
  const byId = new Map(delayed.map((j) => [j.id, j]));
  expect([...byId.keys()].sort()).toEqual([`account-acc_wake_a-${second / 1000}`, `account-acc_wake_a-${second / 1000 + 1}`, `account-acc_wake_b-${second / 1000}`, 'dlv_wake_soon'].sort());
  const a = byId.get(`account-acc_wake_a-${second / 1000}`)!;
  expect(a.data).toEqual({ accountId: 'acc_wake_a' });
  // Due at the end of its second (rounded up): every row it wakes is due by then.
  expect(a.timestamp + a.delay).toBeGreaterThanOrEqual(second - 50);
  expect(a.timestamp + a.delay).toBeLessThanOrEqual(second + 50);
  expect(byId.get('dlv_wake_soon')!.data).toEqual({ deliveryId: 'dlv_wake_soon' });
  await queues.delivery.obliterate({ force: true });
});

test('a retry due 5 min or more ahead wakes its account for a 10 s step: one job for the step\'s retries, due at its end', async () => {
  const now = h.deps.now().getTime();
  const step = ACCOUNT_WAKE_UP_COARSE_STEP_MS;
  // A step's end half an hour ahead, and the step after it.
  const end = Math.ceil((now + 30 * 60_000) / step) * step;
  await queues.scheduleRetries([
    { id: 'dlv_coarse_1', accountId: 'acc_coarse', at: new Date(end - step + 1) },
    { id: 'dlv_coarse_2', accountId: 'acc_coarse', at: new Date(end - 4000) },
    { id: 'dlv_coarse_3', accountId: 'acc_coarse', at: new Date(end) },
    { id: 'dlv_coarse_4', accountId: 'acc_coarse', at: new Date(end + 1) },
    // Just under 5 min ahead: still one-second wake-ups.
    { id: 'dlv_coarse_5', accountId: 'acc_coarse', at: new Date(now + ACCOUNT_WAKE_UP_COARSE_AHEAD_MS - 2000) },
  ]);
  const delayed = await queues.delivery.getJobs(['delayed']);
  const byId = new Map(delayed.map((j) => [j.id, j]));
  const fine = Math.ceil((now + ACCOUNT_WAKE_UP_COARSE_AHEAD_MS - 2000) / 1000);
  expect([...byId.keys()].sort()).toEqual([`account-acc_coarse-${end / 1000}s`, `account-acc_coarse-${(end + step) / 1000}s`, `account-acc_coarse-${fine}`].sort());
  const first = byId.get(`account-acc_coarse-${end / 1000}s`)!;
  expect(first.data).toEqual({ accountId: 'acc_coarse' });
  // Due at the step's end: every row of the step is due by then, none more than a step late.
  expect(first.timestamp + first.delay).toBeGreaterThanOrEqual(end - 50);
  expect(first.timestamp + first.delay).toBeLessThanOrEqual(end + 50);
  await queues.delivery.obliterate({ force: true });
});

test('an account\'s wake-up sends its due rows, and leaves the rows not due yet open', async () => {
  const acc = await accountWithRows(4, '/wake-due');
  const later = new Date(h.deps.now().getTime() + 3_600_000);
  await h.deps.database.db.update(webhookDeliveries).set({ status: 'retrying', nextRetryAt: later }).where(inArray(webhookDeliveries.id, acc.ids.slice(3)));
  const { d, outcomes } = dispatcher();
  try {
    d.wakeAccount(acc.accountId);
    await eventually(async () => outcomes.length === 3 && d.stats().inFlight === 0, 10_000, 'the due rows sent');
  } finally {
    await d.close();
  }
  expect(outcomes.every((o) => o.kind === 'done' && o.status === 'delivered')).toBe(true);
  expect(ok.received.filter((r) => r.path === '/wake-due')).toHaveLength(3);
  const rows = await deliveriesOf(h, acc.endpointId);
  expect(rows.find((r) => r.id === acc.ids[3])).toMatchObject({ status: 'retrying', claimedUntil: null });
  // Its lane is gone once nothing waits: a wake-up leaves no state behind.
  expect(d.stats().accounts).toBe(0);
});

test('one wake-up drains a backlog larger than its lane: the lane reads the rest as it empties; every row delivered once', async () => {
  const acc = await accountWithRows(35, '/wake-backlog');
  const { d, outcomes } = dispatcher(10);
  try {
    d.wakeAccount(acc.accountId);
    // Woken again while its first read may still be under way: nothing is read twice into the lane.
    d.wakeAccount(acc.accountId);
    await eventually(async () => outcomes.length >= 35 && d.stats().inFlight === 0 && d.stats().waiting === 0, 20_000, 'the backlog drained');
  } finally {
    await d.close();
  }
  const arrived = ok.received.filter((r) => r.path === '/wake-backlog').map((r) => JSON.parse(r.body).id as string);
  expect(arrived).toHaveLength(35);
  expect(new Set(arrived).size).toBe(35);
  expect((await deliveriesOf(h, acc.endpointId)).every((r) => r.status === 'delivered')).toBe(true);
});

test('the sweep wakes the accounts whose rows are overdue and free: not rows under a live claim, not rows due within the grace, not inactive accounts', async () => {
  const overdue = await accountWithRows(2, '/sweep-a');
  const claimed = await accountWithRows(1, '/sweep-b');
  const fresh = await accountWithRows(1, '/sweep-c');
  const suspended = await accountWithRows(1, '/sweep-d');
  const now = h.deps.now();
  const old = new Date(now.getTime() - 60_000);
  const mine = [overdue, claimed, fresh, suspended].map((a) => a.accountId);
  await h.deps.database.db.update(webhookDeliveries).set({ status: 'retrying', nextRetryAt: old })
    .where(inArray(webhookDeliveries.id, [...overdue.ids, ...claimed.ids, ...suspended.ids]));
  await h.deps.database.db.update(webhookDeliveries).set({ claimedUntil: new Date(now.getTime() + 60_000) }).where(inArray(webhookDeliveries.id, claimed.ids));
  await h.deps.database.db.update(accounts).set({ state: 'suspended' }).where(eq(accounts.id, suspended.accountId));
  expect(await overdueAccounts(h.deps.database.db, now, 10_000, { accountIds: mine })).toEqual([overdue.accountId]);
  // Woken through its job: whoever takes it reads the account's rows; the rows themselves get no job.
  await queues.wakeAccounts([overdue.accountId]);
  const waiting = await queues.delivery.getJobs(['waiting', 'prioritized']);
  expect(waiting.map((j) => j.data)).toEqual([{ accountId: overdue.accountId }]);
  await queues.delivery.obliterate({ force: true });
});

test('rows waiting in a live process\'s lane are not swept: only rows due before the lane\'s oldest row, less the grace, count; a process that stopped publishing counts for nothing', async () => {
  const acc = await accountWithRows(2, '/lane-sweep');
  const now = h.deps.now();
  const t = now.getTime();
  await h.deps.database.db.update(webhookDeliveries).set({ status: 'retrying', nextRetryAt: new Date(t - 60_000) }).where(inArray(webhookDeliveries.id, acc.ids));
  const mine = [acc.accountId];
  const sweep = (waitingSince?: ReadonlyMap<string, number>) => overdueAccounts(h.deps.database.db, now, 10_000, { accountIds: mine, waitingSince });
  // No lane holds the account: its rows, due a minute ago, are overdue.
  expect(await sweep()).toEqual([acc.accountId]);
  // A lane has held rows of it since 55 s ago: rows due up to the grace before that may be there.
  expect(await sweep(new Map([[acc.accountId, t - 55_000]]))).toEqual([]);
  // The lane's oldest row came 40 s ago: a row due 60 s ago is older than anything it holds (lost).
  expect(await sweep(new Map([[acc.accountId, t - 40_000]]))).toEqual([acc.accountId]);
  // Another account's lane changes nothing for this one.
  expect(await sweep(new Map([['acct_other', t - 55_000]]))).toEqual([acc.accountId]);

  // Through Redis, as the processes publish them: the earliest of the live processes counts.
  const key = laneAgesKey(h.deps.config);
  await h.deps.redis.del(key);
  try {
    await publishLaneAges(h.deps, 'proc-a', new Map([[acc.accountId, t - 30_000]]), t - 1000);
    await publishLaneAges(h.deps, 'proc-b', new Map([[acc.accountId, t - 55_000]]), t - 1000);
    expect((await readLaneAges(h.deps, t)).get(acc.accountId)).toBe(t - 55_000);
    expect(await sweep(await readLaneAges(h.deps, t))).toEqual([]);
    // proc-b stops publishing (it died): past LANE_AGES_STALE_MS its entry counts for nothing, and the rows are the sweep's.
    const later = t + LANE_AGES_STALE_MS;
    await publishLaneAges(h.deps, 'proc-a', new Map([[acc.accountId, t - 30_000]]), later);
    expect((await readLaneAges(h.deps, later)).get(acc.accountId)).toBe(t - 30_000);
    expect(await sweep(await readLaneAges(h.deps, later))).toEqual([acc.accountId]);
    // Long dead entries are deleted; a process whose lanes emptied removes its own.
    await readLaneAges(h.deps, later + LANE_AGES_FORGOTTEN_MS - 1);
    expect(await h.deps.redis.hkeys(key)).toEqual(['proc-a']);
    expect(await publishLaneAges(h.deps, 'proc-a', new Map(), later)).toBe(false);
    expect(await h.deps.redis.hkeys(key)).toEqual([]);
  } finally {
    await h.deps.redis.del(key);
  }
});

test('the maintenance pass reads the lanes\' ages: an account whose overdue rows wait in a live lane is not woken; once that lane is gone it is', async () => {
  const acc = await accountWithRows(1, '/lane-maintain');
  const t = h.deps.now().getTime();
  await h.deps.database.db.update(webhookDeliveries).set({ status: 'retrying', nextRetryAt: new Date(t - 60_000) }).where(inArray(webhookDeliveries.id, acc.ids));
  const schedule = { nextPurgeAt: Infinity };
  try {
    await publishLaneAges(h.deps, 'proc-lane', new Map([[acc.accountId, t - 55_000]]));
    expect((await webhookMaintenance(h.deps, queues, schedule, [acc.accountId])).woken).toBe(0);
    await publishLaneAges(h.deps, 'proc-lane', new Map());
    expect((await webhookMaintenance(h.deps, queues, schedule, [acc.accountId])).woken).toBe(1);
  } finally {
    await h.deps.redis.del(laneAgesKey(h.deps.config));
    await queues.delivery.obliterate({ force: true });
  }
});

test('a dispatcher tells since when rows have waited in each lane: the oldest waiting row\'s arrival, none once the lane is empty', async () => {
  const slow = await startReceiver();
  slow.fallback = { status: 200, delayMs: 1500 };
  const a = await messagingAccount(h);
  const ch = await makeChannel(a.ownerApi);
  await createEndpointRow(h, { accountId: a.accountId, createdByUserId: a.owner.userId, url: slow.url('/lane-age'), events: ['message.posted'] });
  for (let i = 0; i < 8; i++) await post(a.ownerApi, ch, { text: `lane ${i}` });
  const eventIds = (await eventsOf(h, a.accountId)).filter((e) => e.type === 'message.posted').map((e) => e.id);
  const rows = await fanOutEvents(h.deps, eventIds);
  const { d, outcomes } = dispatcher();
  try {
    const before = Date.now();
    d.submit(rows.map((r) => ({ id: r.id, accountId: a.accountId, endpointId: r.endpointId })));
    // 4 slots (2 seats): 4 rows on the wire for 1.5 s, 4 waiting since they came.
    await eventually(async () => slow.inFlight === 4, 10_000, 'four attempts on the wire');
    const since = d.waitingSince(Date.now() + 1);
    expect([...since.keys()]).toEqual([a.accountId]);
    expect(since.get(a.accountId)!).toBeGreaterThanOrEqual(before);
    expect(since.get(a.accountId)!).toBeLessThanOrEqual(Date.now());
    // Only lanes whose oldest row came before the bound are told.
    expect(d.waitingSince(before - 1).size).toBe(0);
    await eventually(async () => outcomes.length >= 8 && d.stats().inFlight === 0, 15_000, 'all delivered');
    expect(d.waitingSince(Date.now() + 1).size).toBe(0);
  } finally {
    await d.close();
    await slow.close();
  }
});
