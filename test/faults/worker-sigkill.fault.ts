import { buildLedger, expectNothingLost, printLedger, settle } from './support/ledger';
import { SETTLE_MS, connectionsOf, sleep, startStack, type Stack } from './support/stack';
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
  await s.startWorker();
  await s.startWorker();

  const load = startLoad(s, t);
  await waitForPosts(load, 20);
  // Kill a worker while the receiver holds requests of its own open (its sockets, read from /proc).
  const survivorOf = (v: typeof s.workers[number]) => s.workers.find((w) => w !== v)!;
  let victim = s.workers[0];
  let inFlightAtKill = 0;
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    const open = new Set(s.rx.openRemotePorts());
    const mine = (w: typeof victim) => connectionsOf(w.pid, s.rx.port).filter((p) => open.has(p)).length;
    const found = s.workers.map((w) => ({ w, n: mine(w) })).find((x) => x.n > 0);
    if (found) {
      victim = found.w;
      inFlightAtKill = found.n;
      break;
    }
    await sleep(20);
  }
  await victim.kill('SIGKILL');
  const survivor = survivorOf(victim);
  const killedAt = Date.now();
  await waitForPosts(load, 20, 120_000, load.results.length); // traffic goes on with one worker
  const posts = await load.stop();

  const settled = await settle(s, t, ['/a', '/b'], SETTLE_MS);
  const ledger = await buildLedger(s, 'worker SIGKILL mid-delivery', t, posts, ['/a', '/b']);
  printLedger(ledger, [
    `${victim.name} killed with ${inFlightAtKill} attempts open at the receiver | settled ${settled} in ${((Date.now() - killedAt) / 1000).toFixed(1)} s after the kill | ${survivor.name} alive ${survivor.alive()}`,
  ]);
  expect(inFlightAtKill).toBeGreaterThan(0);
  expect(settled).toBe(true);
  expectNothingLost(ledger);
  expect(ledger.answered2xx).toBe(ledger.posts); // the API was never touched
  expect(survivor.alive()).toBe(true);
  // The killed worker's open attempts were sent again (same event id): more requests than events at /a.
  const a = ledger.endpoints.find((e) => e.path === '/a')!;
  expect(a.requests).toBeGreaterThan(a.expected);
  for (const e of ledger.endpoints) expect(Object.keys(e.log)).toEqual(['delivered']);
});
