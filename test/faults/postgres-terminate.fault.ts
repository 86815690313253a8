import { Client } from 'pg';
import { buildLedger, expectNothingLost, printLedger, settle } from './support/ledger';
import { SETTLE_MS, sleep, startStack, type Stack } from './support/stack';
import { startLoad, tenant, waitForPosts } from './support/traffic';

/**
 * Fault: every backend of the scenario's database terminated (`pg_terminate_backend`) again and
 * again for `FAULTS_PG_KILL_MS` (default 6 s) under load: the API's, the workers' and the
 * harness's connections, idle or in the middle of a transaction. While it cannot commit the API
 * answers 5xx `internal` with `status_url` (spec: Errors); a post that got a 5xx (or no answer)
 * must either not exist or exist with all its events, which the ledger finds by client_ref.
 * Then it recovers by itself: new connections, no restart.
 */
const KILL_MS = Number(process.env.FAULTS_PG_KILL_MS ?? 6000);

let s: Stack;
afterAll(async () => {
  await s?.close();
});

test('PostgreSQL backends terminated under load: 5xx internal with status_url meanwhile, nothing half-committed, every event delivered', async () => {
  s = await startStack('pgkill');
  const t = await tenant(s, { seats: 8, endpoints: [{ path: '/a' }, { path: '/b' }] });
  await s.startApi();
  await s.startWorker();
  await s.startWorker();

  const load = startLoad(s, t, { intervalMs: 1000 });
  await waitForPosts(load, 20);
  const dbName = new URL(s.dbUrl).pathname.slice(1);
  const killer = new Client({ connectionString: s.dbUrl.replace(`/${dbName}`, '/postgres') });
  await killer.connect();
  let rounds = 0;
  let terminated = 0;
  const from = Date.now();
  while (Date.now() - from < KILL_MS) {
    const r = await killer.query<{ n: number }>(
      `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid))::int AS n FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`,
      [dbName],
    );
    rounds += 1;
    terminated += r.rows[0].n;
    await sleep(150);
  }
  await killer.end();
  const recoveredFrom = load.results.length;
  await waitForPosts(load, 20, 120_000, recoveredFrom); // the API recovers by itself
  const posts = await load.stop();

  const settled = await settle(s, t, ['/a', '/b'], SETTLE_MS);
  const ledger = await buildLedger(s, 'PostgreSQL backends terminated under load', t, posts, ['/a', '/b']);
  printLedger(ledger, [
    `terminated ${terminated} backends in ${rounds} rounds over ${KILL_MS / 1000} s | settled ${settled}`,
  ]);
  expect(terminated).toBeGreaterThan(0);
  expect(settled).toBe(true);
  expectNothingLost(ledger);
  // Every non-2xx is the fault's 5xx internal with status_url (no 4xx, no connection dropped).
  expect(Object.keys(ledger.answeredOther).every((k) => k === '500 internal')).toBe(true);
  const after = posts.slice(recoveredFrom);
  expect(after.filter((p) => p.status === 201).length).toBeGreaterThanOrEqual(20);
  for (const p of s.apis) expect(p.alive()).toBe(true);
  for (const w of s.workers) expect(w.alive()).toBe(true);
});
