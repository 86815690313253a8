/**
 * `npm run bench -- backlog`: an outage's backlog drains (docs/performance.md "Outage backlog").
 *
 * The scenario: receivers were down for an hour at 200 events/s, so 720,000 deliveries wait, in
 * `retrying`, each with its delayed wake-up job in Redis; then the receivers come back. Posting
 * 720,000 events through the API takes longer than the bench may, so the backlog is SEEDED IN SQL
 * (one `webhook_bodies` row and one `webhook_deliveries` row per event, `retrying`, attempts 2–5,
 * as the real path writes them after failed attempts) and its jobs are added to BullMQ through the
 * real producer (`WebhookQueues.scheduleRetries`, as the pipeline schedules retries: one wake-up per account per 10 s for retries an hour ahead).
 * "The receivers come back" = every row falls due at once (its next_retry_at set to now and its
 * delayed job promoted): the worst case, the whole backlog due together (the real schedule would
 * spread it over the next retries, 1m…24h apart).
 *
 * Measured, all on the real path (API process(es), W real worker processes, an HTTPS receiver
 * process for the backlog's accounts and another for the new events' accounts, PostgreSQL, and a
 * redis-server of the bench's own so that `used_memory` is ours alone):
 * 1. steady state: BENCH_BACKLOG_STEADY events posted through the API with no worker running,
 *    then W workers start: deliveries/s between the 10 % and 90 % arrivals (the webhooks bench's
 *    throughput method);
 * 2. Redis `used_memory` per waiting delivery: (after enqueueing the backlog's delayed jobs −
 *    before) ÷ backlog (the running workers' own writes in between count too);
 * 3. the drain: the W workers of (1), running since, take the due backlog (as after a real
 *    outage: the workers ran through it; BENCH_BACKLOG_COLD=1 instead starts them anew at that
 *    moment, a restart into the backlog); deliveries/s between the 10 % and 90 % of the
 *    backlog's arrivals, as a share of (1); sampled every BENCH_BACKLOG_SAMPLE_S: arrivals, Redis
 *    used_memory, each worker's RSS (/proc), queue depths;
 * 4. new events while it drains: other accounts post at BENCH_BACKLOG_LIVE_RATE events/s through
 *    the API; latency = receiver arrival − the API's 2xx (p50/p99);
 * 5. the ledger by event id: every seeded event arrived (missing 0) and how many arrived twice.
 *
 * Knobs: BENCH_BACKLOG_SIZE (720000; e.g. 20000 for development), BENCH_BACKLOG_ACCOUNTS (16: the
 * backlog is spread over that many accounts' endpoints on the one receiver; one seat's 65,000
 * daily units bound what one account can be sent in a day), BENCH_BACKLOG_WORKERS (1), BENCH_BACKLOG_ROLES (none: e.g. `new,due`, one worker per role, docs/operations.md "Worker roles"),
 * BENCH_BACKLOG_APIS (1: API processes; posts go round-robin over them), BENCH_BACKLOG_STEADY (20000), BENCH_BACKLOG_LIVE_RATE (20 events/s), BENCH_BACKLOG_MAX_DRAIN_S
 * (1200), BENCH_BACKLOG_SAMPLE_S (5), BENCH_BACKLOG_COLD (0).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { randomBytes } from 'node:crypto';
import { Pool } from 'undici';
import Redis from 'ioredis';
import * as core from '@teamchat/core';
import { sql } from '@teamchat/db';
import { WebhookQueues } from '@teamchat/delivery';
import { startServer } from './support/child';
import { startReceiverProcess, startWorkerProcess, type WorkerProcess } from './support/processes';
import type { Arrival } from './support/receiver';
import { seedWebhookAccounts, type BenchAccount } from './support/webhook-seed';
import type { BenchContext, BenchResult, Figure } from './run';

const num = (name: string, dflt: number) => Number(process.env[name] ?? dflt);
const SIZE = num('BENCH_BACKLOG_SIZE', 720_000);
const ACCOUNTS = num('BENCH_BACKLOG_ACCOUNTS', 16);
const LIVE_ACCOUNTS = 4;
/** BENCH_BACKLOG_ROLES=new,due: one worker per role listed (WORKER_ROLE, docs/operations.md "Worker roles"); else BENCH_BACKLOG_WORKERS workers of role `all` */
const ROLES = (process.env.BENCH_BACKLOG_ROLES ?? '').split(',').filter(Boolean);
const WORKERS = ROLES.length || num('BENCH_BACKLOG_WORKERS', 1);
const WORKERS_NAMED = ROLES.length ? `${WORKERS} worker(s): ${ROLES.join(' + ')}` : `${WORKERS} worker(s)`;
const APIS = num('BENCH_BACKLOG_APIS', 1);
const STEADY = num('BENCH_BACKLOG_STEADY', 20_000);
const LIVE_RATE = num('BENCH_BACKLOG_LIVE_RATE', 20);
const MAX_DRAIN_S = num('BENCH_BACKLOG_MAX_DRAIN_S', 1200);
const SAMPLE_S = num('BENCH_BACKLOG_SAMPLE_S', 5);
/** 1: the workers stop after the steady state and start anew when the backlog falls due (a restart into it) */
const COLD = process.env.BENCH_BACKLOG_COLD === '1';
const EVENTS_PER_POST = 2;
const SEED_CHUNK = 50_000;

const now = () => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const r1 = (x: number) => Math.round(x * 10) / 10;
const mib = (b: number) => r1(b / 2 ** 20);
function pct(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

/** The bench's own redis-server (no persistence) on a free port, so used_memory counts only this bench. */
async function startRedis(): Promise<{ url: string; stop(): Promise<void> }> {
  const port = await new Promise<number>((resolve) => {
    const srv = net.createServer().listen(0, '127.0.0.1', () => {
      const p = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(p));
    });
  });
  const child: ChildProcess = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--maxmemory-policy', 'noeviction'], { stdio: 'ignore' });
  process.on('exit', () => child.kill('SIGKILL'));
  for (let i = 0; ; i += 1) {
    const probe = new Redis(port, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    probe.on('error', () => undefined);
    try {
      await probe.connect();
      await probe.ping();
      break;
    } catch {
      if (i > 100) throw new Error('bench redis-server did not start');
      await sleep(100);
    } finally {
      probe.disconnect();
    }
  }
  return { url: `redis://127.0.0.1:${port}`, stop: async () => { child.kill('SIGKILL'); } };
}

async function usedMemory(redis: Redis): Promise<number> {
  const info = await redis.info('memory');
  return Number(/used_memory:(\d+)/.exec(info)?.[1] ?? NaN);
}

/** A worker's Prometheus metrics as its operations port serves them. */
async function metricsText(opsPort: number): Promise<string> {
  return (await fetch(`http://127.0.0.1:${opsPort}/metrics`)).text();
}

/** A worker's event-loop delay since its last scrape (prom-client resets it on each collect): p99 and max, ms. */
async function loopLagOf(opsPort: number): Promise<string> {
  const text = await metricsText(opsPort);
  const of = (name: string) => Number(new RegExp(`^${name} (\\S+)`, 'm').exec(text)?.[1] ?? NaN) * 1000;
  return `${r1(of('nodejs_eventloop_lag_p99_seconds'))}/${r1(of('nodejs_eventloop_lag_max_seconds'))}`;
}

function rssOf(pid: number | undefined): number {
  if (!pid) return NaN;
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : NaN;
  } catch {
    return NaN;
  }
}

async function postOne(api: Pool, a: BenchAccount): Promise<{ key: string; answeredAt: number } | null> {
  const res = await api.request({
    method: 'POST',
    path: `/accounts/${a.accountId}/channels/${a.channel}/messages`,
    headers: { authorization: `Bearer ${a.key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ text: `backlog bench: an ordinary line for <@${a.identityId}>` }),
  });
  const answeredAt = now();
  const body = (await res.body.json()) as { ts?: string };
  if (res.statusCode !== 201 || !body.ts) return null;
  return { key: `${a.channel}|${body.ts}`, answeredAt };
}

interface LiveLoad { stop(): Promise<Array<{ key: string; answeredAt: number }>> }

/** Posts at `eventsPerS` (open loop, EVENTS_PER_POST events each) round-robin over `accounts` until stopped. */
function startLive(api: (i: number) => Pool, accounts: BenchAccount[], eventsPerS: number): LiveLoad {
  const posted: Array<{ key: string; answeredAt: number }> = [];
  const pending: Array<Promise<void>> = [];
  let on = true;
  const start = now();
  const every = 1000 / (eventsPerS / EVENTS_PER_POST);
  const loop = (async () => {
    for (let i = 0; on; i += 1) {
      const due = start + i * every;
      if (due > now()) await sleep(due - now());
      if (!on) break;
      pending.push(postOne(api(i), accounts[i % accounts.length]).then((p) => { if (p) posted.push(p); }, () => undefined));
    }
  })();
  return {
    async stop() {
      on = false;
      await loop;
      await Promise.all(pending);
      return posted;
    },
  };
}

/** p50 and p99 of receiver arrival − API 2xx for the posts' arrivals. */
function latencies(arrivals: Arrival[], posted: Array<{ key: string; answeredAt: number }>): number[] {
  const byKey = new Map(posted.map((p) => [p.key, p]));
  return arrivals.filter((a) => byKey.has(`${a.channel}|${a.ts}`)).map((a) => a.at - byKey.get(`${a.channel}|${a.ts}`)!.answeredAt).sort((x, y) => x - y);
}

/** A worker's `teamchat_webhook_stage_seconds` histogram (first attempts only: here, the new events), per stage. */
type StageHistogram = Map<string, { sum: number; count: number; buckets: Array<[number, number]> }>;
async function stageHistogram(opsPort: number): Promise<StageHistogram> {
  const text = await metricsText(opsPort);
  const out: StageHistogram = new Map();
  const of = (stage: string) => {
    let h = out.get(stage);
    if (!h) out.set(stage, (h = { sum: 0, count: 0, buckets: [] }));
    return h;
  };
  for (const line of text.split('\n')) {
    // prom-client writes `le` first, then the metric's labels.
    let m = /^teamchat_webhook_stage_seconds_bucket\{le="([^"]+)",stage="([^"]+)"\} (\S+)/.exec(line);
    if (m) {
      of(m[2]).buckets.push([m[1] === '+Inf' ? Infinity : Number(m[1]), Number(m[3])]);
      continue;
    }
    m = /^teamchat_webhook_stage_seconds_(sum|count)\{stage="([^"]+)"\} (\S+)/.exec(line);
    if (m) of(m[2])[m[1] as 'sum' | 'count'] = Number(m[3]);
  }
  return out;
}

/** Per stage between two scrapes: mean, and the bucket bound under which 99 % fell (ms). */
function stageSummary(before: StageHistogram, after: StageHistogram): string {
  return [...after].map(([stage, a]) => {
    const b = before.get(stage);
    const count = a.count - (b?.count ?? 0);
    if (count <= 0) return `${stage} —`;
    const mean = (1000 * (a.sum - (b?.sum ?? 0))) / count;
    const p99 = a.buckets.find(([, n], i) => n - (b?.buckets[i]?.[1] ?? 0) >= 0.99 * count)?.[0] ?? Infinity;
    return `${stage} mean ${r1(mean)} ms, p99 ≤ ${Number.isFinite(p99) ? p99 * 1000 : '∞'} ms`;
  }).join('; ');
}

/** Rate of the arrivals between their 10 % and 90 % marks (start-up and tail left out). */
function steadyRate(arrivals: Arrival[]): number {
  const xs = [...arrivals].sort((a, b) => a.at - b.at);
  const i10 = Math.floor(0.1 * xs.length);
  const i90 = Math.floor(0.9 * xs.length);
  if (i90 <= i10) return NaN;
  return (i90 - i10) / ((xs[i90].at - xs[i10].at) / 1000);
}

export default async function backlogBench(ctx: BenchContext): Promise<BenchResult> {
  const redisServer = await startRedis();
  const bctx = { ...ctx, redisUrl: redisServer.url };
  const receiver = await startReceiverProcess();
  const servers = [];
  for (let i = 0; i < APIS; i += 1) servers.push(await startServer(bctx));
  const server = servers[0];
  const config = core.loadConfig({ NODE_ENV: 'test', DATABASE_URL: ctx.databaseUrl, REDIS_URL: redisServer.url, LOG_LEVEL: 'silent' }, {
    secretsKey: randomBytes(32).toString('hex'),
    redisPrefix: `backlog-${core.randomToken(6)}`,
  });
  const deps = core.createDeps(config, 'api', { poolSize: 4, statementTimeoutMs: 600_000 });
  const probe = new Redis(redisServer.url);
  // The bench's own producer for seeding: a worker-role connection (no 1 s command bound; bulk adds of thousands of jobs).
  const seedRedis = core.createRedis(redisServer.url, 'worker');
  const queues = new WebhookQueues({ redis: seedRedis, config, now: deps.now });
  const apiUrl = `http://127.0.0.1:${server.ready.ports.off}`;
  const apiPools = servers.map((s) => new Pool(`http://127.0.0.1:${s.ready.ports.off}`, { connections: 32, pipelining: 1 }));
  /** The API process for the i-th post (round-robin, as a load balancer would). */
  const api = (i: number) => apiPools[i % apiPools.length];
  const rxOrigin = `https://localhost:${receiver.port}`;
  // The new events' accounts post to a receiver process of their own (other tenants' receivers are
  // other hosts): the backlog's receiver answers ~4,000 requests a second and is read for the
  // ledger, and its own delays are not the engine's.
  const liveReceiver = await startReceiverProcess();
  const liveOrigin = `https://localhost:${liveReceiver.port}`;
  const caBundle = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'backlog-ca-')), 'ca.pem');
  fs.writeFileSync(caBundle, fs.readFileSync(receiver.caFile, 'utf8') + fs.readFileSync(liveReceiver.caFile, 'utf8'));
  const workerEnv: Record<string, string> = {
    NODE_ENV: 'test', DATABASE_URL: ctx.databaseUrl, REDIS_URL: redisServer.url, REDIS_PREFIX: config.redisPrefix,
    SECRETS_KEY: config.secretsKey, LOG_LEVEL: 'info', LIMITS_ENABLED: 'true', WEBHOOK_ALLOWED_HOSTS: 'localhost', WEBHOOK_CA_FILE: caBundle,
  };
  const workers: WorkerProcess[] = [];
  const stopWorkers = async () => { await Promise.all(workers.splice(0).map((w) => w.stop())); };
  // A worker that did not say "worker started" within its minute (a loaded machine) is tried again, twice.
  const startWorker = async (role: string): Promise<WorkerProcess> => {
    for (let tries = 1; ; tries += 1) {
      try {
        return await startWorkerProcess({ ...workerEnv, WORKER_ROLE: role });
      } catch (err) {
        if (tries >= 3) throw err;
      }
    }
  };
  const startWorkers = async () => { for (let i = 0; i < WORKERS; i += 1) workers.push(await startWorker(ROLES[i] ?? 'all')); };
  const rows: Array<Record<string, string | number>> = [];
  const figures: Figure[] = [];
  const notes: string[] = [];
  const waitArrivals = async (n: number, timeoutMs: number, match?: (a: Arrival) => boolean) => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const c = match ? (await receiver.call<Arrival[]>('arrivals')).filter(match).length : await receiver.call<number>('count');
      if (c >= n || Date.now() > deadline) return c;
      await sleep(match ? 1000 : 100);
    }
  };
  try {
    const backlogAccounts = await seedWebhookAccounts(deps, apiUrl, ACCOUNTS, rxOrigin);
    const liveAccounts = await seedWebhookAccounts(deps, apiUrl, LIVE_ACCOUNTS, liveOrigin);
    const db = deps.database.db;

    // Other benches' unrelayed events (same run database) are relayed first, unmeasured.
    const unrelayed = async () => Number((await db.execute<{ n: string }>(sql`SELECT count(*) AS n FROM events WHERE relayed_at IS NULL`)).rows[0].n);
    if ((await unrelayed()) > 0) {
      await startWorkers();
      for (let d = Date.now() + 300_000; (await unrelayed()) > 0 && Date.now() < d;) await sleep(500);
      await stopWorkers();
    }

    // 1. Steady state: a backlog of first attempts committed through the API, then the workers.
    let seq = 0;
    let started = 0;
    let committed = 0;
    await Promise.all(Array.from({ length: 32 }, async () => {
      while (started < Math.ceil(STEADY / EVENTS_PER_POST)) {
        started += 1;
        const i = seq++;
        if (await postOne(api(i), backlogAccounts[i % backlogAccounts.length]).catch(() => null)) committed += 1;
      }
    }));
    await receiver.call('reset');
    await startWorkers();
    const steadyGot = await waitArrivals(committed * EVENTS_PER_POST, 600_000);
    const steady = steadyRate(await receiver.call<Arrival[]>('arrivals'));
    rows.push({ phase: `steady state: ${committed * EVENTS_PER_POST} new events, ${WORKERS_NAMED}`, 'deliveries/s': Math.round(steady), arrived: steadyGot, note: 'relay → fan-out → dispatch, first attempts' });
    // The live load's latency with no backlog (the baseline of the same load during the drain).
    await liveReceiver.call('reset');
    const quietStagesBefore = await stageHistogram(workers[0].opsPort).catch(() => null);
    const quiet = startLive(api, liveAccounts, LIVE_RATE);
    await sleep(15_000);
    const quietPosted = await quiet.stop();
    await sleep(3000);
    const quietStagesAfter = await stageHistogram(workers[0].opsPort).catch(() => null);
    if (quietStagesBefore && quietStagesAfter) notes.push(`where the new events' time went with no backlog (worker1's teamchat_webhook_stage_seconds): ${stageSummary(quietStagesBefore, quietStagesAfter)}.`);
    const quietLat = latencies(await liveReceiver.call<Arrival[]>('arrivals'), quietPosted);
    // The workers run on through the outage (its rows and wake-ups are an hour ahead), unless a restart into it is measured.
    if (COLD) await stopWorkers();
    rows.push({ phase: `new events, no backlog (${LIVE_ACCOUNTS} accounts, ${LIVE_RATE} events/s offered, 15 s)`, 'deliveries/s': '', arrived: quietLat.length, note: `API 2xx → receiver p50 ${r1(pct(quietLat, 50))} ms, p99 ${r1(pct(quietLat, 99))} ms, of ${quietPosted.length * EVENTS_PER_POST} expected` });

    // 2. The outage's backlog, seeded in SQL, its delayed jobs added through the real producer.
    const memBefore = await usedMemory(probe);
    const seedStart = now();
    const tag = core.randomToken(6).toLowerCase();
    for (let from = 0; from < SIZE; from += SEED_CHUNK) {
      const to = Math.min(SIZE, from + SEED_CHUNK) - 1;
      const accts = sql.join(backlogAccounts.map((a) => sql`(${a.accountId}, ${a.endpointId}, ${a.channel})`), sql`, `);
      await db.execute(sql`
        WITH a AS (SELECT row_number() OVER () - 1 AS k, t.* FROM (VALUES ${accts}) AS t(account_id, endpoint_id, channel)),
             n AS (SELECT i, (SELECT count(*) FROM a) AS na FROM generate_series(${from}::int, ${to}::int) AS i),
             src AS (SELECT n.i, a.account_id, a.endpoint_id, a.channel,
                            'evt_bk' || ${tag} || lpad(n.i::text, 7, '0') AS event_id,
                            now() - interval '1 hour' + (n.i * interval '5 milliseconds') AS created_at
                       FROM n JOIN a ON a.k = n.i % n.na),
             b AS (INSERT INTO webhook_bodies (id, account_id, event_id, event_type, mode, body, created_at)
                   SELECT 'whb_bk' || ${tag} || lpad(i::text, 7, '0'), account_id, event_id, 'message.posted', 'pointers',
                          json_build_object('id', event_id, 'type', 'message.posted', 'account_id', account_id, 'created_at', created_at,
                                            'channel', json_build_object('id', channel), 'ts', '1700000000.' || lpad(i::text, 6, '0'))::text,
                          created_at
                     FROM src RETURNING id)
        INSERT INTO webhook_deliveries (id, account_id, endpoint_id, event_id, event_type, body_id, kind, chain_id, attempt, status,
                                        next_retry_at, response_status, error, event_created_at, created_at, attempted_at)
        SELECT 'dlv_bk' || ${tag} || lpad(i::text, 7, '0'), account_id, endpoint_id, event_id, 'message.posted',
               'whb_bk' || ${tag} || lpad(i::text, 7, '0'), 'event', 'dlv_bk' || ${tag} || lpad(i::text, 7, '0'),
               2 + i % 4, 'retrying', now() + interval '1 hour', 503, 'receiver answered 503', created_at, created_at, created_at
          FROM src`);
    }
    const seededSqlS = (now() - seedStart) / 1000;
    const ids = (await db.execute<{ id: string; account_id: string }>(sql`SELECT id, account_id FROM webhook_deliveries WHERE id LIKE ${`dlv_bk${tag}%`} ORDER BY id`)).rows;
    // Each row's next attempt an hour after its failure, as the pipeline schedules it (the
    // failures 5 ms apart over the hour): through the real producer, which wakes each account
    // once per 10 s of retries this far ahead (queues.ts).
    const inHour = Date.now() + 3_600_000;
    for (let i = 0; i < ids.length; i += 2000) {
      await queues.scheduleRetries(ids.slice(i, i + 2000).map((r, k) => ({ id: r.id, accountId: r.account_id, at: new Date(inHour + (i + k) * 5) })));
    }
    const memAfter = await usedMemory(probe);
    const perWaiting = (memAfter - memBefore) / Math.max(1, ids.length);
    rows.push({ phase: `backlog seeded: ${ids.length} retrying deliveries over ${ACCOUNTS} accounts (SQL ${r1(seededSqlS)} s, jobs ${r1((now() - seedStart) / 1000 - seededSqlS)} s)`, 'deliveries/s': '', arrived: '', note: `Redis used_memory +${mib(memAfter - memBefore)} MiB = ${Math.round(perWaiting)} B per waiting delivery (wake-up jobs)` });

    // 3. The receivers come back: every row due now, every delayed job promoted; the workers take
    // them (running since the steady state; started now with BENCH_BACKLOG_COLD=1).
    await receiver.call('reset');
    const dueAt = now();
    await db.execute(sql`UPDATE webhook_deliveries SET next_retry_at = now() WHERE id LIKE ${`dlv_bk${tag}%`} AND status = 'retrying'`);
    // The seed wrote in seconds what the real path writes over an hour, while autovacuum's
    // ANALYZE keeps the planner's statistics current; without this the first seconds of the drain
    // measure plans made for the log as it was before the seed (a scan per claim), until the
    // worker's maintenance pass analyzes the partition (analyzeChangedLogPartitions).
    await db.execute(sql`ANALYZE webhook_deliveries`);
    await db.execute(sql`ANALYZE webhook_bodies`);
    await queues.delivery.promoteJobs({ count: 10_000 });
    // A running worker's sweep may find the rows due before their jobs are promoted.
    const drainStart = COLD ? now() : dueAt;
    if (COLD) await startWorkers();
    const stagesBefore = await stageHistogram(workers[0].opsPort).catch(() => null);
    // 4. New events of other accounts while it drains.
    const liveLoad = startLive(api, liveAccounts, LIVE_RATE);
    const samples: Array<Record<string, string | number>> = [];
    const isBacklog = (a: Arrival) => a.eventId.startsWith(`evt_bk${tag}`);
    let backlogArrived = 0;
    /** the new events' posts, once their load is stopped */
    let live: Awaited<ReturnType<LiveLoad['stop']>> | undefined;
    await liveReceiver.call('reset');
    await Promise.all(workers.map((w) => loopLagOf(w.opsPort).catch(() => '')));
    // Each worker's CPU (µs since it started) from its own process.cpuUsage(), over IPC.
    const cpuUsOf = () => Promise.all(workers.map(async (w) => (await w.stats().catch(() => null))?.cpuUs ?? NaN));
    let cpuAt = await cpuUsOf();
    let sampledAt = now();
    for (;;) {
      await sleep(SAMPLE_S * 1000);
      const cpuNow = await cpuUsOf();
      const busy = cpuNow.map((c, i) => Math.round((100 * (c - cpuAt[i]) / 1000) / Math.max(1, now() - sampledAt)));
      [cpuAt, sampledAt] = [cpuNow, now()];
      const lags = await Promise.all(workers.map((w) => loopLagOf(w.opsPort).catch(() => '')));
      // The count while it drains (the whole list only at the end: sending 720,000 arrivals over
      // IPC stalls the receiver), the distinct events once the count says all may be in.
      backlogArrived = await receiver.call<number>('count');
      if (backlogArrived >= ids.length) {
        // The new events' load ends, and its deliveries arrive (up to 5 s), before the whole list is
        // read: reading 720,000 arrivals over IPC takes the cores for a second or more, which the
        // new events' last window measured as theirs (p99 59-141 ms there against 24-48 ms in the
        // windows before).
        live ??= await liveLoad.stop();
        const expected = live.length * EVENTS_PER_POST;
        for (const until = now() + 5000; (await liveReceiver.call<number>('count')) < expected && now() < until;) await sleep(50);
        backlogArrived = new Set((await receiver.call<Arrival[]>('arrivals')).filter(isBacklog).map((a) => a.eventId)).size;
      }
      const counts = await queues.delivery.getJobCounts('wait', 'delayed', 'active');
      samples.push({
        's': Math.round((now() - drainStart) / 1000), 'backlog delivered': backlogArrived, 'Redis used_memory MiB': mib(await usedMemory(probe)),
        ...Object.fromEntries(workers.map((w, i) => [`worker${i + 1} RSS MiB`, mib(rssOf(w.child.pid))])),
        ...Object.fromEntries(workers.map((w, i) => [`worker${i + 1} CPU % / loop lag p99/max ms`, `${busy[i]} / ${lags[i]}`])),
        'jobs waiting': counts.wait ?? 0, 'jobs delayed': counts.delayed ?? 0,
      });
      if (backlogArrived >= ids.length || now() - drainStart > MAX_DRAIN_S * 1000) break;
    }
    live ??= await liveLoad.stop();
    await sleep(3000);
    const stagesAfter = await stageHistogram(workers[0].opsPort).catch(() => null);
    if (stagesBefore && stagesAfter) notes.push(`where the new events' time went during the drain (worker1's teamchat_webhook_stage_seconds; first attempts only, so the backlog's retries are not in it): ${stageSummary(stagesBefore, stagesAfter)}.`);
    const arrivals = await receiver.call<Arrival[]>('arrivals');
    const liveArrivals = await liveReceiver.call<Arrival[]>('arrivals');
    await stopWorkers();
    const backlogArrivals = arrivals.filter(isBacklog);
    const drain = steadyRate(backlogArrivals);
    // A loop, not Math.max(...arrivals): 720,000 arguments overflow the stack.
    const lastAt = backlogArrivals.reduce((m, a) => (a.at > m ? a.at : m), -Infinity);
    const drainS = backlogArrivals.length ? (lastAt - drainStart) / 1000 : NaN;
    const byEvent = new Map<string, number>();
    for (const a of backlogArrivals) byEvent.set(a.eventId, (byEvent.get(a.eventId) ?? 0) + 1);
    const missing = ids.length - byEvent.size;
    const twice = [...byEvent.values()].filter((n) => n > 1).length;
    const liveLat = latencies(liveArrivals, live);
    // Where in the drain the new events' tail is: their p99 per sample window (by the post's 2xx).
    const liveByKey = new Map(live.map((p) => [p.key, p.answeredAt]));
    const liveTimed = liveArrivals.filter((a) => liveByKey.has(`${a.channel}|${a.ts}`)).map((a) => {
      const answeredAt = liveByKey.get(`${a.channel}|${a.ts}`)!;
      return { s: (answeredAt - drainStart) / 1000, ms: a.at - answeredAt };
    });
    samples.forEach((sample, i) => {
      const from = i === 0 ? -Infinity : Number(samples[i - 1].s);
      const inWindow = liveTimed.filter((x) => x.s >= from && x.s < Number(sample.s)).map((x) => x.ms).sort((x, y) => x - y);
      sample['new events p50/p99 ms'] = inWindow.length ? `${r1(pct(inWindow, 50))}/${r1(pct(inWindow, 99))}` : '';
    });
    const status = (await db.execute<{ status: string; n: string }>(sql`SELECT status, count(*) AS n FROM webhook_deliveries WHERE id LIKE ${`dlv_bk${tag}%`} GROUP BY status`)).rows;
    rows.push(
      { phase: `drain: ${ids.length} due at once, ${WORKERS_NAMED} ${COLD ? 'started at that moment' : 'running since the steady state'}`, 'deliveries/s': Math.round(drain), arrived: byEvent.size, note: `${r1((100 * drain) / steady)} % of steady state; last arrival ${r1(drainS)} s after the start; rows ${status.map((s) => `${s.status} ${s.n}`).join(', ')}` },
      { phase: `new events during the drain (${LIVE_ACCOUNTS} other accounts, ${LIVE_RATE} events/s offered)`, 'deliveries/s': '', arrived: liveLat.length, note: `API 2xx → receiver p50 ${r1(pct(liveLat, 50))} ms, p99 ${r1(pct(liveLat, 99))} ms, of ${live.length * EVENTS_PER_POST} expected` },
      { phase: 'ledger by event id (backlog)', 'deliveries/s': '', arrived: byEvent.size, note: `missing ${missing}, delivered twice ${twice}` },
    );
    const rss = samples.map((s) => Number(s['worker1 RSS MiB'])).filter(Number.isFinite);
    const third = Math.max(1, Math.floor(rss.length / 3));
    const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    figures.push(
      { id: 'backlog_drain_per_s', figure: `Outage backlog drain, ${ids.length} due deliveries, ${WORKERS_NAMED}`, value: Math.round(drain), unit: '/s', baseline: 'steady-state deliveries/s, same workers, same accounts', baselineValue: Math.round(steady), ratioPct: r1((100 * drain) / steady), target: '≥ 80 % of steady state', met: drain >= 0.8 * steady && missing === 0 },
      { id: 'backlog_redis_bytes_per_waiting', figure: 'Redis used_memory per waiting delivery (wake-up jobs)', value: Math.round(perWaiting), unit: 'B', baseline: 'empty queue', baselineValue: 0 },
      { id: 'backlog_live_e2e_p99_ms', figure: `New events' latency p99 (API 2xx → receiver) during the drain, ${LIVE_RATE} events/s of other accounts`, value: r1(pct(liveLat, 99)), unit: 'ms', baseline: 'the same load with no backlog, same run', baselineValue: r1(pct(quietLat, 99)), target: '≤ 50 ms (the webhook latency target)', met: pct(liveLat, 99) <= 50 },
    );
    if (rss.length >= 3) notes.push(`worker1 RSS over the drain: first third median ${med(rss.slice(0, third))} MiB, last third ${med(rss.slice(-third))} MiB.`);
    console.log('\nbacklog drain samples:');
    console.table(samples);
    if (backlogArrived < ids.length) notes.push(`the drain was cut at BENCH_BACKLOG_MAX_DRAIN_S=${MAX_DRAIN_S} s with ${ids.length - backlogArrived} deliveries not yet arrived (missing counts them).`);
    return {
      title: `Outage backlog: ${ids.length} retrying deliveries (seeded in SQL, jobs through BullMQ) due at once, ${APIS} API process(es), ${WORKERS_NAMED}, ${ACCOUNTS} accounts`,
      rows,
      figures,
      notes: [
        'Backlog seeded in SQL (bodies + retrying delivery rows, attempts 2–5) and its wake-ups added through WebhookQueues.scheduleRetries (one per account per second of retries, per 10 s for retries 5 min or more ahead: these are an hour ahead); then every row made due and every job promoted at once (the worst case). Steady state: first attempts of events posted through the API, drained by the same workers (10 %–90 % arrivals).',
        'Redis is a redis-server of the bench\'s own (used_memory is the queues\' alone). Worker RSS from /proc, CPU % (of one core, over the window) from its process.cpuUsage(); loop lag = prom-client\'s nodejs_eventloop_lag_p99/max_seconds over the window, which include its 10 ms sampling timer (an idle process shows ~10).',
        ...notes,
      ],
    };
  } finally {
    await stopWorkers().catch(() => undefined);
    await Promise.all(apiPools.map((p) => p.close().catch(() => undefined)));
    await queues.close().catch(() => undefined);
    probe.disconnect();
    seedRedis.disconnect();
    await Promise.all(servers.map((s) => s.close()));
    await receiver.close();
    await liveReceiver.close();
    await deps.close();
    await redisServer.stop();
  }
}
