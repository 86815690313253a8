import { buildLedger, expectNothingLost, printLedger, settle } from './ledger';
import { SETTLE_MS, sleep, startStack, type Stack } from './stack';
import { startLoad, tenant, waitForPosts } from './traffic';

/**
 * Fault: the scenario's own Redis killed (SIGKILL, no persistence: it comes back empty, every
 * queued job gone) under load, kept away for `FAULTS_REDIS_DOWN_MS` (default 8 s), then started
 * again on the same port(s). The API must keep answering 2xx (limits decided without Redis, the
 * outbox in PostgreSQL); the workers must reconnect by themselves, and the relay and sweep must
 * rebuild from PostgreSQL whatever the lost queues held. `single`: one redis-server; `cluster`:
 * a three-master Redis Cluster, every node killed and started again (its slot map kept).
 */
const DOWN_MS = Number(process.env.FAULTS_REDIS_DOWN_MS ?? 8000);

/** Defines the scenario's test in the calling file; `timeoutMs` for a Jest config whose default is shorter (npm test). */
export function redisOutageScenario(kind: 'single' | 'cluster', timeoutMs?: number): void {
  let s: Stack;
  afterAll(async () => {
    await s?.close();
  });
  const what = kind === 'cluster' ? 'Redis Cluster (three masters)' : 'Redis';
  test(`${what} stopped for several seconds under load, then started again: the API answers 2xx throughout, every event is delivered`, async () => {
    s = await startStack(kind === 'cluster' ? 'rediscluster' : 'redis', { redis: kind });
    const t = await tenant(s, { seats: 8, endpoints: [{ path: '/a' }, { path: '/b', behaviour: { status: 200, delayMs: 100 } }] });
    await s.startApi();
    await s.startWorker();
    await s.startWorker();

    const load = startLoad(s, t);
    await waitForPosts(load, 20);
    const before = load.results.length;
    await s.redis.stop();
    const downAt = Date.now();
    await sleep(DOWN_MS);
    const during = load.results.slice(before);
    await s.redis.start();
    const upAt = Date.now();
    await waitForPosts(load, 20, 120_000, load.results.length);
    const posts = await load.stop();

    const settled = await settle(s, t, ['/a', '/b'], SETTLE_MS);
    const ledger = await buildLedger(s, `${what} stopped and started under load`, t, posts, ['/a', '/b']);
    const duringOk = during.filter((p) => p.status >= 200 && p.status < 300).length;
    printLedger(ledger, [
      `${what} away ${((upAt - downAt) / 1000).toFixed(1)} s | posts answered while away ${during.length} (2xx ${duringOk}) | settled ${settled} in ${((Date.now() - upAt) / 1000).toFixed(1)} s after the restart`,
    ]);
    expect(during.length).toBeGreaterThan(0);
    expect(duringOk).toBe(during.length); // the API keeps answering 2xx while Redis is away
    expect(ledger.answered2xx).toBe(ledger.posts);
    expect(settled).toBe(true);
    expectNothingLost(ledger);
    for (const p of s.apis) expect(p.alive()).toBe(true);
    for (const w of s.workers) expect(w.alive()).toBe(true);
  }, timeoutMs);
}
