import { sql } from '@teamchat/db';
import { buildLedger, expectNothingLost, printLedger, settle } from './support/ledger';
import { SETTLE_MS, sleep, startStack, type Stack } from './support/stack';
import { startLoad, tenant, waitForPosts } from './support/traffic';

/**
 * Fault: a worker process killed with SIGKILL while it has deliveries in flight (the receiver
 * answers after 300 ms, so attempts are always in flight under load). No goodbye: its claims and
 * BullMQ locks are left to run out. The other worker must finish everything: the killed worker's
 * attempts are re-attempted (same event id) once their claim lapses.
 */
let s: Stack;
afterAll(async () => {
  await s?.close();
});

test('a worker killed with SIGKILL mid-delivery: the other worker delivers every event', async () => {
  s = await startStack('sigkill');
  const t = await tenant(s, { seats: 6, endpoints: [{ path: '/a', behaviour: { status: 200, delayMs: 300 } }, { path: '/b' }] });
  await s.startApi();
  const [victim] = [await s.startWorker(), await s.startWorker()];

  const load = startLoad(s, t);
  await waitForPosts(load, 20);
  // Kill it while it holds claimed attempts: claimed rows exist, and the receiver has requests open.
  const claimed = async () => Number((await s.h.deps.database.db.execute<{ n: number }>(sql`
    SELECT count(*)::int AS n FROM webhook_deliveries WHERE claimed_until > now() AND status IN ('pending', 'retrying')`)).rows[0].n);
  let inFlightAtKill = 0;
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    inFlightAtKill = await claimed();
    if (inFlightAtKill > 0) break;
    await sleep(20);
  }
  await victim.kill('SIGKILL');
  const killedAt = Date.now();
  await waitForPosts(load, 20, 120_000, load.results.length); // traffic goes on with one worker
  const posts = await load.stop();

  const settled = await settle(s, t, ['/a', '/b'], SETTLE_MS);
  const ledger = await buildLedger(s, 'worker SIGKILL mid-delivery', t, posts, ['/a', '/b']);
  printLedger(ledger, [
    `claimed attempts at the kill ${inFlightAtKill} | settled ${settled} in ${((Date.now() - killedAt) / 1000).toFixed(1)} s after the kill | survivor alive ${s.workers[1].alive()}`,
  ]);
  expect(inFlightAtKill).toBeGreaterThan(0);
  expect(settled).toBe(true);
  expectNothingLost(ledger);
  expect(ledger.answered2xx).toBe(ledger.posts); // the API was never touched
  expect(s.workers[1].alive()).toBe(true);
  for (const e of ledger.endpoints) expect(Object.keys(e.log)).toEqual(['delivered']);
});
