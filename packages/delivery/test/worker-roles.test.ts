import { and, eq, events } from '@teamchat/db';
import { startDeliveryEngine, type DeliveryEngine } from '../src';
import { createMigratedDatabase, dropDatabase } from '../../../test/support/databases';
import type { Harness } from '../../../test/support/harness';
import { startReceiver, type Receiver } from '../../../test/support/https-receiver';
import { makeChannel, messagingAccount, post } from '../../../test/support/messaging';
import { createEndpointRow, deliveriesOf, eventually, startWebhookHarness } from '../../../test/support/webhooks';

/**
 * Worker roles (docs/operations.md "Worker roles"): a `new` worker relays and fans out new events
 * and sends their first attempts; everything that falls due later (a retry, rows left waiting,
 * the sweep) is a `due` worker's. A deployment with both delivers everything. Real HTTPS
 * receiver, PostgreSQL, Redis and BullMQ; the engines run in this process. The file has a
 * database of its own: it checks that nothing is sent or relayed for a while, and a whole
 * worker started by another file on the shared database would relay every account's events.
 */
let own: { name: string; url: string };
let h: Harness;
let rx: Receiver;
const accountIds: string[] = [];
const running: DeliveryEngine[] = [];
const start = (role: 'new' | 'due') => {
  const engine = startDeliveryEngine(h.deps, { accountIds, role, maintenanceIntervalMs: 200 });
  running.push(engine);
  return engine;
};
const stopAll = async () => { await Promise.all(running.splice(0).map((e) => e.close())); };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

beforeAll(async () => {
  own = await createMigratedDatabase('teamchat_roles');
  h = await startWebhookHarness({ databaseUrl: own.url });
  rx = await startReceiver();
});
afterEach(stopAll);
afterAll(async () => {
  await rx.close();
  await h.close();
  await dropDatabase(own.name);
});

async function setup() {
  const a = await messagingAccount(h);
  accountIds.push(a.accountId);
  const ch = await makeChannel(a.ownerApi);
  const path = `/roles-${Math.random().toString(36).slice(2, 8)}`;
  const ep = await createEndpointRow(h, { accountId: a.accountId, createdByUserId: a.owner.userId, url: rx.url(path) });
  return { a, ch, ep, path, mine: () => rx.received.filter((r) => r.path === path) };
}

test("a `new` worker sends a new event's first attempt; its retry waits for a `due` worker, which sends it", async () => {
  const { a, ch, ep, mine } = await setup();
  rx.fallback = { status: 500 };
  start('new');
  await post(a.ownerApi, ch, { text: 'first attempt fails' });
  await eventually(async () => (mine().length === 1 ? true : null), 15_000, 'the first attempt');
  const retrying = await eventually(async () => {
    const rows = await deliveriesOf(h, ep.id);
    return rows.some((r) => r.status === 'retrying') ? rows : null;
  }, 15_000, 'the retry row');
  expect(retrying.length).toBeGreaterThanOrEqual(1);
  rx.fallback = { status: 200 };
  // The retry falls due within 200 ms (the test schedule), and the `new` worker neither takes
  // wake-ups nor sweeps: nothing is sent while it runs alone.
  await sleep(1_500);
  expect(mine()).toHaveLength(1);
  start('due');
  await eventually(async () => (mine().length === 2 ? true : null), 15_000, 'the retry, sent by the `due` worker');
  await eventually(async () => ((await deliveriesOf(h, ep.id)).some((r) => r.status === 'delivered') ? true : null), 15_000, 'the retry recorded');
});

test('a `due` worker does not relay: a new event waits, unrelayed, for a `new` worker', async () => {
  const { a, ch, ep, mine } = await setup();
  start('due');
  await post(a.ownerApi, ch, { text: 'waits for the relay' });
  await sleep(1_500);
  expect(mine()).toHaveLength(0);
  const posted = await h.deps.database.db.select().from(events).where(and(eq(events.channelId, ch), eq(events.type, 'message.posted')));
  expect(posted).toHaveLength(1);
  expect(posted[0].relayedAt).toBeNull();
  start('new');
  await eventually(async () => (mine().length === 1 ? true : null), 15_000, 'the delivery, once a `new` worker runs');
  await eventually(async () => {
    const rows = await deliveriesOf(h, ep.id);
    return rows.length === 1 && rows[0].status === 'delivered' ? true : null;
  }, 15_000, 'recorded delivered');
});
