import { Client } from 'pg';
import { newId } from '@teamchat/core';
import { fanOutEvents, webhookQueuesFor } from '../src';
import type { Harness } from '../../../test/support/harness';
import { makeChannel, messagingAccount, post, eventsOf } from '../../../test/support/messaging';
import { createEndpointRow, eventually, startWebhookHarness } from '../../../test/support/webhooks';
import { RELAY_LEASE_MS, startRelay, type Relay } from '../src/relay';

/**
 * The relay (docs/webhooks.md "The delivery engine"): every worker process runs a relay, but one scans at a time (a Redis lease):
 * two relays would cut the same rows into different batches. When the holder stops, another
 * takes over; rows still flow into fan-out jobs. No fan-out worker runs here: the jobs are read
 * from the queue.
 */
let h: Harness;
const relays: Relay[] = [];
beforeAll(async () => {
  h = await startWebhookHarness();
});
afterAll(async () => {
  await Promise.all(relays.map((r) => r.stop()));
  await h.close();
});

type Queues = ReturnType<typeof webhookQueuesFor>;
type FanOutJob = Awaited<ReturnType<Queues['fanout']['getJobs']>>[number];
const eventIdsOf = (j: FanOutJob) => j.data.eventIds ?? [j.data.eventId];
/** The events in fan-out jobs still to run (no fan-out worker runs here: they stay). */
const jobEvents = async (queues: Queues) => (await queues.fanout.getJobs(['waiting', 'active', 'delayed', 'prioritized'])).flatMap(eventIdsOf);
/**
 * Why a wait for events in fan-out jobs ended in vain: which relays lead, whether the account's
 * events were relayed by something else, and every fan-out job in any state.
 */
const explainHandOver = (queues: Queues, accountId: string, leaders: () => string) => async () => {
  const jobs = await queues.fanout.getJobs(['waiting', 'active', 'delayed', 'prioritized', 'completed', 'failed', 'paused']);
  const states = await Promise.all(jobs.map(async (j) => `${await j.getState()}: ${eventIdsOf(j).join(',')}`));
  const events = (await eventsOf(h, accountId)).map((e) => `${e.id} relayed ${e.relayedAt?.toISOString() ?? 'no'}`);
  return `leading: ${leaders()}; events ${events.join('; ')}; fan-out jobs ${states.join(' | ') || 'none'}`;
};

test('two relays: exactly one holds the lease and hands events over; when it stops, the other takes over', async () => {
  const a = await messagingAccount(h);
  const ch = await makeChannel(a.ownerApi);
  await createEndpointRow(h, { accountId: a.accountId, createdByUserId: a.owner.userId, url: 'https://localhost:1/x', events: ['message.posted'] });
  const queues = webhookQueuesFor(h.deps);
  const options = { accountIds: [a.accountId], pollMs: 10 };
  const one = startRelay(h.deps, queues, options);
  const two = startRelay(h.deps, queues, options);
  relays.push(one, two);

  await eventually(async () => one.leading() !== two.leading(), 5_000, 'one relay to lead');
  await new Promise((r) => setTimeout(r, 1_500)); // renewals: still exactly one
  expect([one.leading(), two.leading()].filter(Boolean)).toHaveLength(1);

  const explain = explainHandOver(queues, a.accountId, () => `one ${one.leading()}, two ${two.leading()}`);
  await post(a.ownerApi, ch, { text: 'handed over by the leader' });
  const ids = (await eventsOf(h, a.accountId)).map((e) => e.id);
  await eventually(async () => {
    const js = await jobEvents(queues);
    return ids.every((id) => js.includes(id));
  }, 5_000, 'the events in fan-out jobs', explain);
  // Each event is in exactly one job: one relay cut the batches.
  const handed = await jobEvents(queues);
  for (const id of ids) expect(handed.filter((x) => x === id)).toHaveLength(1);

  const leader = one.leading() ? one : two;
  const other = leader === one ? two : one;
  await leader.stop(); // gives the lease back
  await eventually(async () => other.leading(), RELAY_LEASE_MS + 2_000, 'the other relay to take over');
  await post(a.ownerApi, ch, { text: 'handed over by the new leader' });
  const later = (await eventsOf(h, a.accountId)).map((e) => e.id).filter((id) => !ids.includes(id));
  await eventually(async () => {
    const js = await jobEvents(queues);
    return later.every((id) => js.includes(id));
  }, 5_000, 'the new events in fan-out jobs', explain);
});

test('a backlog larger than the relay\'s window: every event handed over exactly once, including one committed after events with a higher seq', async () => {
  const a = await messagingAccount(h);
  const ch = await makeChannel(a.ownerApi);
  await createEndpointRow(h, { accountId: a.accountId, createdByUserId: a.owner.userId, url: 'https://localhost:1/x', events: ['message.posted'] });
  const queues = webhookQueuesFor(h.deps);
  // A window of 3 rows and no fan-out worker: the first 3 unrelayed rows stay unrelayed, so
  // the relay can only go on with its cursor (rows after the highest seq it handed over).
  const relay = startRelay(h.deps, queues, { accountIds: [a.accountId], pollMs: 10, batch: 3 });
  relays.push(relay);
  const explain = explainHandOver(queues, a.accountId, () => `the relay ${relay.leading()}`);

  // An event whose transaction takes its seq now and commits last.
  const late = new Client({ connectionString: h.deps.config.databaseUrl });
  await late.connect();
  const lateId = newId('event');
  try {
    await late.query('BEGIN');
    await late.query(`INSERT INTO events (id, account_id, type, channel_id, data) VALUES ($1, $2, 'message.posted', $3, '{}'::jsonb)`, [lateId, a.accountId, ch]);
    for (let i = 0; i < 10; i++) await post(a.ownerApi, ch, { text: `backlog ${i}` });
    const ids = (await eventsOf(h, a.accountId)).map((e) => e.id);
    expect(ids.length).toBeGreaterThanOrEqual(10); // and the channel's own event
    await eventually(async () => {
      const js = await jobEvents(queues);
      return ids.every((id) => js.includes(id));
    }, 5_000, 'the backlog in fan-out jobs', explain);
    await late.query('COMMIT');
  } finally {
    await late.end();
  }
  await eventually(async () => (await jobEvents(queues)).includes(lateId), 5_000, 'the late commit in a fan-out job', explain);
  await new Promise((r) => setTimeout(r, 600)); // a few more full scans: nothing handed over twice
  const handed = await jobEvents(queues);
  const all = (await eventsOf(h, a.accountId)).map((e) => e.id);
  expect(all).toContain(lateId);
  for (const id of all) expect(handed.filter((x) => x === id)).toHaveLength(1);
  await relay.stop();
});

test('a commit of outbox rows wakes the relay at once (LISTEN/NOTIFY): with its poll a minute away, the event is handed over within a second', async () => {
  const a = await messagingAccount(h);
  const ch = await makeChannel(a.ownerApi);
  await createEndpointRow(h, { accountId: a.accountId, createdByUserId: a.owner.userId, url: 'https://localhost:1/x', events: ['message.posted'] });
  const queues = webhookQueuesFor(h.deps);
  const relay = startRelay(h.deps, queues, { accountIds: [a.accountId], pollMs: 60_000 });
  relays.push(relay);
  await eventually(async () => relay.leading(), 5_000, 'the relay to lead');
  await new Promise((r) => setTimeout(r, 300)); // its first scan is done; the next poll is a minute away
  const before = new Set((await eventsOf(h, a.accountId)).map((e) => e.id));
  const postedAt = Date.now();
  await post(a.ownerApi, ch, { text: 'wake the relay' });
  const [id] = (await eventsOf(h, a.accountId)).map((e) => e.id).filter((x) => !before.has(x));
  await eventually(async () => (await jobEvents(queues)).includes(id), 5_000, 'the event in a fan-out job');
  expect(Date.now() - postedAt).toBeLessThan(1_000);
  await relay.stop();
});

test('latency first at low load: a caught-up relay fans a small scan out itself (no fan-out job); a backlog past its window goes to fan-out jobs', async () => {
  const a = await messagingAccount(h);
  const ch = await makeChannel(a.ownerApi);
  await createEndpointRow(h, { accountId: a.accountId, createdByUserId: a.owner.userId, url: 'https://localhost:1/x', events: ['message.posted'] });
  const queues = webhookQueuesFor(h.deps);
  const here: string[][] = [];
  const fanOutHere = async (ids: string[]) => {
    here.push(ids);
    await fanOutEvents(h.deps, ids);
  };
  const relay = startRelay(h.deps, queues, { accountIds: [a.accountId], pollMs: 10, fanOutHere });
  relays.push(relay);
  await eventually(async () => relay.leading(), 5_000, 'the relay to lead');
  const before = new Set((await eventsOf(h, a.accountId)).map((e) => e.id));
  await post(a.ownerApi, ch, { text: 'fanned out by the relay itself' });
  const [id] = (await eventsOf(h, a.accountId)).map((e) => e.id).filter((x) => !before.has(x));
  await eventually(async () => here.flat().includes(id), 5_000, 'the relay to fan the event out');
  // The event is marked relayed by the fan-out's own write, which commits after the call began.
  await eventually(
    async () => (await h.deps.database.pool.query('SELECT relayed_at FROM events WHERE id = $1', [id])).rows[0].relayed_at !== null,
    5_000, 'the fan-out write to mark the event relayed',
  );
  expect(await jobEvents(queues)).not.toContain(id);
  await relay.stop();

  // A backlog larger than the relay's window (3 rows here): fan-out jobs, shared by every worker process.
  // (no relay runs while the backlog is written)
  const seen = new Set((await eventsOf(h, a.accountId)).map((e) => e.id));
  for (let i = 0; i < 8; i++) await post(a.ownerApi, ch, { text: `backlog ${i}` });
  const backlog = (await eventsOf(h, a.accountId)).map((e) => e.id).filter((x) => !seen.has(x));
  here.length = 0;
  const relay2 = startRelay(h.deps, queues, { accountIds: [a.accountId], pollMs: 10, batch: 3, fanOutHere });
  relays.push(relay2);
  await eventually(async () => (await jobEvents(queues)).some((x) => backlog.includes(x)), 5_000, 'part of the backlog in fan-out jobs');
  await relay2.stop();
});
