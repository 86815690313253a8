import { sql, webhookBodies } from '@teamchat/db';
import { newId } from '@teamchat/core';
import { startDeliveryEngine, type DeliveryEngine } from '../src';
import { createMigratedDatabase, dropDatabase } from '../../../test/support/databases';
import type { Harness } from '../../../test/support/harness';
import { startReceiver, type Answer, type Receiver } from '../../../test/support/https-receiver';
import { makeChannel, messagingAccount, post, type MessagingAccount } from '../../../test/support/messaging';
import { createEndpointRow, eventually, startWebhookHarness } from '../../../test/support/webhooks';

/**
 * Isolation between accounts (docs/webhooks.md "Fair share"): account A has thousands of
 * deliveries waiting for a receiver that hangs until the answer time (or fails at once, or
 * answers 2xx after a long delay), and posts more meanwhile; account B posts to a healthy
 * receiver. Each of B's deliveries must arrive promptly, never behind A's timeouts: the bound
 * below (4 s from the moment B's client sends its POST) is generous (the machine running the
 * tests may be loaded), and below the answer time (6 s here), so one A attempt's timeout in B's
 * path fails it. A real worker in this process
 * (relay, fan-out, dispatcher, sweep), real HTTPS receivers, a database of its own.
 */
jest.setTimeout(120_000);

const BACKLOG = 3_000;
const ANSWER_TIME_MS = 6_000;
const B_BOUND_MS = 4_000;

let db: { name: string; url: string };
let h: Harness;
let aRx: Receiver;
let bRx: Receiver;
let worker: DeliveryEngine;
const accountIds: string[] = [];
let b: MessagingAccount;
let bChannel: string;

beforeAll(async () => {
  db = await createMigratedDatabase('teamchat_whisolation');
  h = await startWebhookHarness({ databaseUrl: db.url, limitsEnabled: false, webhookTimeoutMs: ANSWER_TIME_MS });
  aRx = await startReceiver();
  bRx = await startReceiver();
  b = await messagingAccount(h);
  accountIds.push(b.accountId);
  bChannel = await makeChannel(b.ownerApi);
  await createEndpointRow(h, { accountId: b.accountId, createdByUserId: b.owner.userId, url: bRx.url('/b'), events: ['message.posted'] });
  worker = startDeliveryEngine(h.deps, { accountIds, maintenanceIntervalMs: 300 });
});
afterAll(async () => {
  await worker.close();
  await aRx.close();
  await bRx.close();
  await h.close();
  await dropDatabase(db.name);
});

/** A new account A whose endpoint (at A's receiver, answering `answer`) has BACKLOG deliveries waiting, written as the fan-out writes them. */
async function accountWithBacklog(answer: Answer): Promise<{ a: MessagingAccount; channel: string; path: string }> {
  const a = await messagingAccount(h);
  const channel = await makeChannel(a.ownerApi);
  const path = `/a-${newId('event').slice(4, 12)}`;
  aRx.fallback = answer;
  const ep = await createEndpointRow(h, { accountId: a.accountId, createdByUserId: a.owner.userId, url: aRx.url(path), events: ['message.posted'] });
  const bodyId = newId('webhookBody');
  const eventId = newId('event');
  await h.deps.database.db.insert(webhookBodies).values({ id: bodyId, accountId: a.accountId, eventId, eventType: 'message.posted', mode: 'pointers', body: '{"seeded":true}' });
  // Written a minute ago: the sweep hands them to the worker's dispatcher as a lost wake-up would be.
  await h.deps.database.db.execute(sql`
    INSERT INTO webhook_deliveries (id, chain_id, attempt, status, kind, account_id, endpoint_id, event_id, event_type, body_id, event_created_at, created_at)
    SELECT 'dlv_backlog' || g || ${path}, 'dlv_backlog' || g || ${path}, 1, 'pending', 'event', ${a.accountId}, ${ep.id}, ${eventId}, 'message.posted', ${bodyId},
           now() - interval '1 minute', now() - interval '1 minute'
      FROM generate_series(1, ${BACKLOG}) g`);
  accountIds.push(a.accountId);
  return { a, channel, path };
}

/** B posts `n` messages, one every 100 ms: each one's time from its client's send to its arrival at B's receiver. */
async function bLatencies(n: number): Promise<number[]> {
  const sentAt = new Map<string, number>();
  const before = bRx.received.length;
  for (let i = 0; i < n; i++) {
    const started = Date.now();
    const m = await post(b.ownerApi, bChannel, { text: `b ${i}` });
    sentAt.set(m.ts, started);
    await new Promise((r) => setTimeout(r, Math.max(0, 100 - (Date.now() - started))));
  }
  const arrivals = await eventually(async () => {
    const got = bRx.received.slice(before).filter((r) => r.path === '/b');
    return got.length >= n ? got : null;
  }, 30_000, 'B\'s deliveries');
  return arrivals.map((r) => r.at - sentAt.get(JSON.parse(r.body).ts as string)!);
}

describe.each([
  ['hangs until the answer time', { hang: true } as Answer],
  ['answers 500 at once', { status: 500 } as Answer],
  ['answers 2xx after a long delay', { status: 200, delayMs: ANSWER_TIME_MS - 1_000 } as Answer],
])('A\'s receiver %s', (_name, answer) => {
  test(`with ${BACKLOG} of A's deliveries waiting and A posting more, each of B's deliveries arrives within ${B_BOUND_MS} ms of B's POST`, async () => {
    const { a, channel, path } = await accountWithBacklog(answer);
    // A's backlog reaches the dispatcher (the sweep), and A's receiver is busy with it.
    await eventually(async () => aRx.received.filter((r) => r.path === path).length >= 4, 15_000, 'A\'s receiver busy');
    // A posts more meanwhile, through the relay and fan-out like B.
    const aPosts = Promise.all(Array.from({ length: 40 }, (_, i) => post(a.ownerApi, channel, { text: `a ${i}` })));
    const latencies = await bLatencies(20);
    await aPosts;
    expect(latencies).toHaveLength(20);
    expect(Math.max(...latencies)).toBeLessThan(B_BOUND_MS);
    // A's backlog is still far from done: B did not simply wait it out.
    const open = await h.deps.database.db.execute<{ n: string }>(sql`SELECT count(*) AS n FROM webhook_deliveries WHERE account_id = ${a.accountId} AND status IN ('pending', 'retrying')`);
    expect(Number(open.rows[0].n)).toBeGreaterThan(0);
    // Done with A: its account drops out of this worker's scope.
    accountIds.splice(accountIds.indexOf(a.accountId), 1);
  });
});
