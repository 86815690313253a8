import { valueOf } from '../support/prometheus';
import { buildLedger, expectNothingLost, printLedger, settle } from './support/ledger';
import { SETTLE_MS, rssOf, sleep, startStack, type Stack } from './support/stack';
import { startLoad, tenant } from './support/traffic';

/**
 * Soak: two API processes and two workers under a steady load for `FAULTS_SOAK_SECONDS`
 * (default 180: "a few minutes"). Every `FAULTS_SOAK_SAMPLE_SECONDS` (default 5) it samples each process's
 * resident memory (/proc/<pid>/status) and the queue depths and outbox backlog a worker reports
 * on its operations port (/metrics: `teamchat_queue_jobs`, `teamchat_outbox_backlog_events`).
 * "Flat" means:
 * - memory: after a warm-up (the first 20 % of the samples: JIT, pools and caches filling), the
 *   median of the last third of the samples is within `FAULTS_SOAK_RSS_GROWTH` (default 1.25×) of the
 *   median of the first third, for every process;
 * - queues: the depth (waiting + active + delayed, fan-out and delivery) keeps no trend (the last
 *   third's median at most twice the first third's, or under 50 jobs), and it is back under 5 within the settle time once the
 *   load stops; the outbox backlog likewise.
 * Then the ledger, as in every scenario. The load stays well under the machine's delivery
 * capacity (raise it with FAULTS_SOAK_INTERVAL_MS): a soak looks for leaks and trends at a
 * sustainable rate; an offered load above capacity grows the queue by definition, and
 * throughput is `npm run bench`'s question.
 */
const SECONDS = Number(process.env.FAULTS_SOAK_SECONDS ?? 180);
const SAMPLE_S = Number(process.env.FAULTS_SOAK_SAMPLE_SECONDS ?? 5);
const RSS_GROWTH = Number(process.env.FAULTS_SOAK_RSS_GROWTH ?? 1.25);
/** accounts posting at once, 3 seats each, each seat one post every `FAULTS_SOAK_INTERVAL_MS` (default 3000) */
const TENANTS = 3;
const INTERVAL_MS = Number(process.env.FAULTS_SOAK_INTERVAL_MS ?? 3000);

let s: Stack;
afterAll(async () => {
  await s?.close();
});

interface Sample { t: number; rss: number[]; depth: number; backlog: number; posts: number }

const median = (xs: number[]) => {
  const v = [...xs].sort((a, b) => a - b);
  return v.length === 0 ? NaN : v.length % 2 ? v[(v.length - 1) / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
};
const mb = (b: number) => (b / 1048576).toFixed(0).padStart(4);

test(`soak: two APIs and two workers under steady load for ${SECONDS} s keep memory and queue depth flat`, async () => {
  s = await startStack('soak');
  // Several accounts, as a real fleet serves: one account's deliveries are capped at 4 in flight
  // (spec Limits), which is not what a soak measures.
  const tenants = [];
  for (let i = 0; i < TENANTS; i++) {
    tenants.push(await tenant(s, { seats: 3, endpoints: [{ path: `/t${i}-a` }, { path: `/t${i}-b`, behaviour: { status: 200, delayMs: 50 } }] }));
  }
  await s.startApi();
  await s.startApi();
  await s.startWorker();
  await s.startWorker();
  const procs = [...s.apis, ...s.workers];

  const sample = async (start: number, posts: number): Promise<Sample> => {
    const m = await s.workerMetrics(0);
    const depth = ['webhook-fanout', 'webhook-delivery'].reduce((n, queue) =>
      n + ['waiting', 'active', 'delayed'].reduce((k, state) => k + valueOf(m, 'teamchat_queue_jobs', { queue, state }), 0), 0);
    return { t: Math.round((Date.now() - start) / 1000), rss: procs.map((p) => rssOf(p.pid)), depth, backlog: valueOf(m, 'teamchat_outbox_backlog_events'), posts };
  };

  const loads = tenants.map((t) => startLoad(s, t, { intervalMs: INTERVAL_MS }));
  const posted = () => loads.reduce((n, l) => n + l.results.length, 0);
  const start = Date.now();
  const samples: Sample[] = [];
  while (Date.now() - start < SECONDS * 1000) {
    await sleep(SAMPLE_S * 1000);
    samples.push(await sample(start, posted()));
  }
  const posts = await Promise.all(loads.map((l) => l.stop()));
  // Drained: the queues and the outbox are empty again shortly after the load stops.
  let drained: Sample | null = null;
  let lastSeen: Sample | null = null;
  const deadline = Date.now() + SETTLE_MS;
  while (Date.now() < deadline) {
    const x = await sample(start, posted()).catch(() => null);
    lastSeen = x ?? lastSeen;
    if (x && x.depth < 5 && x.backlog < 5) {
      drained = x;
      break;
    }
    await sleep(1000);
  }

  const ledgers = [];
  let settled = true;
  for (const [i, t] of tenants.entries()) {
    const complete = [...t.endpoints.keys()];
    settled = (await settle(s, t, complete, SETTLE_MS)) && settled;
    ledgers.push(await buildLedger(s, `soak ${SECONDS} s, 2 APIs + 2 workers, account ${i + 1} of ${TENANTS}`, t, posts[i], complete));
  }
  const header = `   t(s)  posts ${procs.map((p) => `${p.name.padStart(7)} MB`).join(' ')}  queue depth  outbox`;
  const rows = samples.map((x) => `  ${String(x.t).padStart(5)} ${String(x.posts).padStart(6)} ${x.rss.map((r) => `${mb(r)}`.padStart(10)).join(' ')}  ${String(x.depth).padStart(11)}  ${String(x.backlog).padStart(6)}`);
  const warm = Math.ceil(samples.length * 0.2);
  const steady = samples.slice(warm);
  const third = Math.max(1, Math.floor(steady.length / 3));
  const first = steady.slice(0, third);
  const last = steady.slice(-third);
  const growth = procs.map((_p, i) => median(last.map((x) => x.rss[i])) / median(first.map((x) => x.rss[i])));
  const depthFirst = median(first.map((x) => x.depth));
  const depthLast = median(last.map((x) => x.depth));
  for (const l of ledgers.slice(0, -1)) printLedger(l);
  printLedger(ledgers[ledgers.length - 1], [
    'SOAK samples',
    header,
    ...rows,
    `rss growth (last third / first third median, after ${warm} warm-up samples): ${procs.map((p, i) => `${p.name} ${growth[i].toFixed(2)}x`).join(', ')} (bound ${RSS_GROWTH}x)`,
    `queue depth median first third ${depthFirst}, last third ${depthLast}; drained ${drained ? `at ${drained.t} s (depth ${drained.depth}, outbox ${drained.backlog})` : `no (last seen at ${lastSeen?.t} s: depth ${lastSeen?.depth}, outbox ${lastSeen?.backlog})`}`,
  ]);

  expect(samples.length).toBeGreaterThanOrEqual(6);
  for (const [i, p] of procs.entries()) expect({ process: p.name, growthWithinBound: growth[i] <= RSS_GROWTH }).toEqual({ process: p.name, growthWithinBound: true });
  expect(depthLast <= Math.max(2 * depthFirst, 50)).toBe(true);
  expect(drained).not.toBeNull();
  expect(settled).toBe(true);
  for (const l of ledgers) {
    expectNothingLost(l);
    expect(l.answered2xx).toBe(l.posts);
  }
  for (const p of procs) expect(p.alive()).toBe(true);
});
