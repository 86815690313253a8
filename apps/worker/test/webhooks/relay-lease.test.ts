import { webhookQueuesFor } from '@teamchat/core';
import type { Harness } from '../../../../test/support/harness';
import { makeChannel, messagingAccount, post, eventsOf } from '../../../../test/support/messaging';
import { createEndpointRow, eventually, startWebhookHarness } from '../../../../test/support/webhooks';
import { RELAY_LEASE_MS, startRelay, type Relay } from '../../src/webhooks/relay';

/**
 * Issue 11 "Relay": every worker process runs a relay, but one scans at a time (a Redis lease):
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

  const jobEvents = async () => (await queues.fanout.getJobs(['waiting', 'active', 'delayed', 'prioritized'])).flatMap((j) => j.data.eventIds ?? [j.data.eventId]);
  await post(a.ownerApi, ch, { text: 'handed over by the leader' });
  const ids = (await eventsOf(h, a.accountId)).map((e) => e.id);
  await eventually(async () => {
    const js = await jobEvents();
    return ids.every((id) => js.includes(id));
  }, 5_000, 'the events in fan-out jobs');
  // Each event is in exactly one job: one relay cut the batches.
  const handed = await jobEvents();
  for (const id of ids) expect(handed.filter((x) => x === id)).toHaveLength(1);

  const leader = one.leading() ? one : two;
  const other = leader === one ? two : one;
  await leader.stop(); // gives the lease back
  await eventually(async () => other.leading(), RELAY_LEASE_MS + 2_000, 'the other relay to take over');
  await post(a.ownerApi, ch, { text: 'handed over by the new leader' });
  const later = (await eventsOf(h, a.accountId)).map((e) => e.id).filter((id) => !ids.includes(id));
  await eventually(async () => {
    const js = await jobEvents();
    return later.every((id) => js.includes(id));
  }, 5_000, 'the new events in fan-out jobs');
});
