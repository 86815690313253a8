/**
 * `npm run bench -- webhooks`: the webhook pipeline (docs/performance.md "Webhook delivery"), through the real path only:
 * messages posted through the real API (bench/support/server.ts, in its own process), the real
 * worker entrypoint (bench/support/worker.ts → apps/worker/src/main.ts: relay, fan-out,
 * delivery) in 1..N processes, and a real HTTPS receiver on loopback (bench/support/receiver.ts,
 * its own process, throwaway CA). Real PostgreSQL, Redis and BullMQ; limits ON in the workers
 * (the in-flight cap lease and the unit charge of every attempt are paid).
 *
 * 1. Latency: one worker; posts at a steady BENCH_WH_RATE/s (open loop: each post is sent at its
 *    scheduled time, whatever the answers) for BENCH_WH_DURATION s after BENCH_WH_WARMUP s.
 *    latency = the receiver's arrival time − the API's 2xx answer to the post (both clocks are
 *    this machine's epoch clock, sub-ms); also given against the event's `created_at`.
 *    Baseline: raw undici POSTs to the same receiver at the same rate (their round trip).
 * 2. Throughput: a backlog of BENCH_WH_BACKLOG posted messages is committed with no worker
 *    running, then W worker processes start; deliveries/s = arrivals between the 10 % and 90 %
 *    marks ÷ the time between them (start-up and tail left out), and worker CPU µs/delivery =
 *    the workers' process.cpuUsage() over the same marks ÷ the deliveries in between.
 *    Baseline: raw undici keep-alive HTTPS POSTs/s from one process to the same receiver.
 */
import { randomBytes } from 'node:crypto';
import { Agent, Pool } from 'undici';
import fs from 'node:fs';
import * as core from '@teamchat/core';
import { sql } from '@teamchat/db';
import { startServer } from './support/child';
import { startReceiverProcess, startWorkerProcess, type WorkerProcess } from './support/processes';
import type { Arrival } from './support/receiver';
import { seedWebhookAccounts, type BenchAccount } from './support/webhook-seed';
import type { BenchContext, BenchResult, Figure } from './run';
import { MAX_OUTSTANDING, closedLoop, now, paced, pct, r1, sleep } from './support/pace';
import { postgresCpuBetween, readPostgresCpu, type PostgresCpu } from './support/postgres-cpu';

const num = (name: string, dflt: number) => Number(process.env[name] ?? dflt);
/** events/s of the latency run; each post raises EVENTS_PER_POST events (message.posted + mention), each one delivery */
const RATE = num('BENCH_WH_RATE', 500);
const EVENTS_PER_POST = 2;
const POST_RATE = RATE / EVENTS_PER_POST;
/** a second, lower steady rate (events/s) measured first: the pipeline's own latency where the machine keeps up; 0 skips it */
const LOW_RATE = num('BENCH_WH_LOW_RATE', 100);
const DURATION_S = num('BENCH_WH_DURATION', 15);
const WARMUP_S = num('BENCH_WH_WARMUP', 3);
const BACKLOG = num('BENCH_WH_BACKLOG', 20000);
const ACCOUNTS = num('BENCH_WH_ACCOUNTS', 32);
const RAW_CONNECTIONS = num('BENCH_WH_RAW_CONNECTIONS', 64);
const RAW_DURATION_S = num('BENCH_WH_RAW_DURATION', 5);
const WORKER_COUNTS = (process.env.BENCH_WH_WORKERS ?? '1,2').split(',').map(Number).filter((n) => n > 0);
/** BENCH_WH_ONLY=latency,throughput picks the phases */
const ONLY = process.env.BENCH_WH_ONLY?.split(',');
const want = (id: string) => !ONLY || ONLY.includes(id);

interface Posted { key: string; sentAt: number; answeredAt: number }

/** POSTs one message through the API; resolves with the arrival key (channel|ts) and times. */
async function postOne(api: Pool, a: BenchAccount): Promise<Posted | null> {
  const text = `webhook bench: status update for <@${a.identityId}>, an ordinary line of chat`;
  const sentAt = now();
  const res = await api.request({
    method: 'POST',
    path: `/accounts/${a.accountId}/channels/${a.channel}/messages`,
    headers: { authorization: `Bearer ${a.key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ text }),
  });
  const answeredAt = now();
  const body = (await res.body.json()) as { ts?: string };
  if (res.statusCode !== 201 || !body.ts) return null;
  return { key: `${a.channel}|${body.ts}`, sentAt, answeredAt };
}

/** Commits `n` messages (32 posts at a time); answers how many were committed. */
async function commitBacklog(n: number, post: () => Promise<Posted | null>): Promise<number> {
  let started = 0;
  let ok = 0;
  await Promise.all(Array.from({ length: 32 }, async () => {
    while (started < n) {
      started += 1;
      if (await post().catch(() => null)) ok += 1;
    }
  }));
  return ok;
}

export default async function webhooksBench(ctx: BenchContext): Promise<BenchResult> {
  const receiver = await startReceiverProcess();
  const server = await startServer(ctx);
  const config = core.loadConfig({ NODE_ENV: 'test', DATABASE_URL: ctx.databaseUrl, REDIS_URL: ctx.redisUrl, LOG_LEVEL: 'silent' }, {
    secretsKey: randomBytes(32).toString('hex'),
    redisPrefix: `whbench-${core.randomToken(6)}`,
  });
  const deps = core.createDeps(config, 'api', { poolSize: 4 });
  const apiUrl = `http://127.0.0.1:${server.ready.ports.off}`;
  const api = new Pool(apiUrl, { connections: 64, pipelining: 1 });
  const rxOrigin = `https://localhost:${receiver.port}`;
  const raw = new Agent({ connect: { ca: [fs.readFileSync(receiver.caFile, 'utf8')] }, connections: RAW_CONNECTIONS, keepAliveTimeout: 30_000 });
  const workerEnv: Record<string, string> = {
    NODE_ENV: 'test',
    DATABASE_URL: ctx.databaseUrl,
    REDIS_URL: ctx.redisUrl,
    REDIS_PREFIX: config.redisPrefix,
    SECRETS_KEY: config.secretsKey,
    LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'info',
    LIMITS_ENABLED: 'true',
    WEBHOOK_ALLOWED_HOSTS: 'localhost',
    WEBHOOK_CA_FILE: receiver.caFile,
    ...(process.env.BENCH_QUERY_LOG ? { BENCH_QUERY_LOG: process.env.BENCH_QUERY_LOG } : {}),
  };
  const workers: WorkerProcess[] = [];
  const stopWorkers = async () => { await Promise.all(workers.splice(0).map((w) => w.stop())); };
  const rows: Array<Record<string, string | number>> = [];
  const figures: Figure[] = [];
  const notes: string[] = [];
  try {
    const accounts = await seedWebhookAccounts(deps, apiUrl, ACCOUNTS, rxOrigin);
    let seq = 0;
    const nextAccount = () => accounts[seq++ % accounts.length];
    // A real stored body, for the raw baseline's POSTs.
    const sampleBody = JSON.stringify({ id: core.newId('event'), type: 'message.posted', account_id: accounts[0].accountId, created_at: new Date().toISOString(), channel: accounts[0].channel, ts: '1700000000.000100', author: 'idn_x', thread_ts: null, mentions: [], broadcast: false, session: null, links_count: 0, attachments_count: 0 });
    const rawPost = async () => {
      const res = await raw.request({ origin: rxOrigin, method: 'POST', path: '/raw', headers: { 'content-type': 'application/json', 'x-service-signature': `t=1,v1=${'0'.repeat(64)}` }, body: sampleBody });
      await res.body.dump();
      if (res.statusCode !== 200) throw new Error(`raw ${res.statusCode}`);
    };
    await closedLoop(RAW_CONNECTIONS, 1, rawPost); // TLS handshakes and JIT warm-up

    const waitArrivals = async (n: number, timeoutMs: number, onTick?: (c: number) => Promise<void>) => {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const c = await receiver.call<number>('count');
        if (onTick) await onTick(c);
        if (c >= n) return c;
        if (Date.now() > deadline) throw new Error(`receiver got ${c} of ${n} deliveries in ${timeoutMs} ms`);
        await sleep(20);
      }
    };

    // The run's database also holds the other benches' messages, whose events were never
    // relayed: a worker relays them first (marks them relayed, no endpoint matches), unmeasured.
    const unrelayed = async () => Number((await deps.database.db.execute<{ n: string }>(sql`SELECT count(*) AS n FROM events WHERE relayed_at IS NULL`)).rows[0].n);
    if ((await unrelayed()) > 0) {
      workers.push(await startWorkerProcess(workerEnv));
      const deadline = Date.now() + 300_000;
      while ((await unrelayed()) > 0 && Date.now() < deadline) await sleep(200);
      await stopWorkers();
    }

    if (want('latency')) {
      workers.push(await startWorkerProcess(workerEnv));
      // Warm-up: the worker's pools, JIT, the API; then the measured runs, the lower rate first
      // (a rate the machine cannot sustain leaves a backlog behind it).
      await paced(Math.min(POST_RATE, 50), 5, () => postOne(api, nextAccount()));
      await waitArrivals(Math.min(POST_RATE, 50) * 5 * EVENTS_PER_POST, 30_000).catch(() => undefined);
      const rates = [...new Set([LOW_RATE, RATE])].filter((r) => r > 0).sort((x, y) => x - y);
      for (const rate of rates) {
        await receiver.call('reset');
        const postRate = rate / EVENTS_PER_POST;
        const s0 = await workers[0].stats();
        const t0 = now();
        const run = await paced(postRate, WARMUP_S + DURATION_S, () => postOne(api, nextAccount()));
        const posted = run.results.filter((p): p is Posted => p !== null);
        await waitArrivals(posted.length * EVENTS_PER_POST, 90_000).catch((err: Error) => notes.push(`latency at ${rate}/s: ${err.message}`));
        const s1 = await workers[0].stats();
        const measured = new Map(posted.filter((p) => p.sentAt >= t0 + WARMUP_S * 1000).map((p) => [p.key, p]));
        // The count can include stragglers of the warm-up: wait (up to 10 s) until every measured post's deliveries are in.
        let arrivals = await receiver.call<Arrival[]>('arrivals');
        for (let waited = 0; waited < 10_000; waited += 200) {
          if (arrivals.filter((a) => measured.has(`${a.channel}|${a.ts}`)).length >= measured.size * EVENTS_PER_POST) break;
          await sleep(200);
          arrivals = await receiver.call<Arrival[]>('arrivals');
        }
        const e2e: number[] = [];
        const fromCreated: number[] = [];
        const apiLat = [...measured.values()].map((p) => p.answeredAt - p.sentAt);
        for (const a of arrivals) {
          const p = measured.get(`${a.channel}|${a.ts}`);
          if (!p) continue;
          e2e.push(a.at - p.answeredAt);
          fromCreated.push(a.at - Date.parse(a.createdAt));
        }
        const missing = measured.size * EVENTS_PER_POST - e2e.length;
        for (const xs of [e2e, fromCreated, apiLat]) xs.sort((x, y) => x - y);
        const eventsPerS = (measured.size * EVENTS_PER_POST) / DURATION_S;
        // Baseline: raw POSTs to the same receiver at the same rate, their round trip.
        const rawS = Math.min(DURATION_S, 5);
        const rawRun = await paced(rate, rawS, async () => { const t = now(); await rawPost(); return now() - t; });
        const rawLat = (rawRun.results as number[]).sort((x, y) => x - y);
        const line = (measure: string, r: number, xs: number[], extra: Record<string, string | number> = {}) => ({
          measure, 'events/s': r1(r), n: xs.length, 'p50 ms': r1(pct(xs, 50)), 'p90 ms': r1(pct(xs, 90)), 'p99 ms': r1(pct(xs, 99)), 'max ms': r1(pct(xs, 100)), missing: '', 'worker CPU µs/delivery': '', ...extra,
        });
        const per = (n: number) => r1(n / Math.max(1, arrivals.length));
        rows.push(
          line(`commit (API 2xx) → receiver, 1 worker, offered ${rate} events/s`, eventsPerS, e2e, { missing, 'worker CPU µs/delivery': Math.round(per(s1.cpuUs - s0.cpuUs)), 'PG rt/delivery': per(s1.pgQueries - s0.pgQueries), 'Redis cmd/delivery': per(s1.redisCommands - s0.redisCommands) }),
          line('  event created_at → receiver (same deliveries)', eventsPerS, fromCreated),
          line(`  the API post itself (send → 2xx), ${r1(measured.size / DURATION_S)} posts/s`, eventsPerS, apiLat),
          line(`  baseline: raw undici POST round trip to the receiver, ${rate}/s`, rawLat.length / rawS, rawLat),
        );
        if (s1.queries) printQueriesPerDelivery(`at ${rate} events/s`, new Map(Object.entries(s0.queries ?? {})), new Map(Object.entries(s1.queries)), arrivals.length);
        if (run.errors || run.late) notes.push(`latency at ${rate}/s: ${run.errors} posts failed, ${run.late} not sent (over ${MAX_OUTSTANDING} posts outstanding: the API did not keep up)`);
        const label = `1 worker, ${r1(eventsPerS)} events/s committed (offered ${rate})`;
        const key = rate === RATE ? '' : `_at_${rate}`;
        figures.push(
          { id: `webhook_e2e_p50_ms${key}`, figure: `Delivery latency p50, commit (API 2xx) → receiver, ${label}`, value: r1(pct(e2e, 50)), unit: 'ms', baseline: `raw undici POST round trip p50 at ${rate}/s`, baselineValue: r1(pct(rawLat, 50)) },
          { id: `webhook_e2e_p99_ms${key}`, figure: `Delivery latency p99, commit (API 2xx) → receiver, ${label}`, value: r1(pct(e2e, 99)), unit: 'ms', baseline: `raw undici POST round trip p99 at ${rate}/s`, baselineValue: r1(pct(rawLat, 99)),
            ...(rate === RATE ? { target: `≤ 25 ms at ${RATE} events/s`, met: pct(e2e, 99) <= 25 && missing === 0 && eventsPerS >= 0.95 * RATE } : {}) },
        );
      }
      await stopWorkers();
    }

    if (want('throughput')) {
      const rawRun = await (async () => {
        const c0 = process.cpuUsage();
        const r = await closedLoop(RAW_CONNECTIONS, RAW_DURATION_S, rawPost);
        const c = process.cpuUsage(c0);
        return { rps: r.done / r.wallS, cpuUs: (c.user + c.system) / Math.max(1, r.done), errors: r.errors };
      })();
      rows.push({ measure: `baseline: raw undici keep-alive HTTPS POSTs, 1 process, ${RAW_CONNECTIONS} connections`, 'deliveries/s': Math.round(rawRun.rps), '% of raw': 100, 'scaling vs 1 worker': '', 'CPU µs/delivery': Math.round(rawRun.cpuUs), 'PostgreSQL CPU µs/delivery': 0, 'PG rt/delivery': 0, 'Redis cmd/delivery': 0, n: '', dup: '' });
      let one = 0;
      for (const count of WORKER_COUNTS) {
        await receiver.call('reset');
        // The backlog: committed through the API while no worker runs.
        const target = EVENTS_PER_POST * (await commitBacklog(Math.ceil(BACKLOG / EVENTS_PER_POST), () => postOne(api, nextAccount())));
        // The workers start together; the measured window opens once every one of them is ready
        // (a process's start, its code loaded and its warm-up, is not sustained throughput: started
        // one after another, the second one's start ran inside the first one's deliveries).
        workers.push(...(await Promise.all(Array.from({ length: count }, () => startWorkerProcess(workerEnv)))));
        const allReady = Date.now();
        const atReady = await receiver.call<number>('count');
        const from = Math.max(Math.ceil(0.1 * target), atReady + 1);
        type Mark = { c: number; cpu: number; pg: number; redis: number; queries: Map<string, number>; pgCpu: PostgresCpu | null };
        const marks: Array<Mark | undefined> = [undefined, undefined];
        const statsAll = async (c: number): Promise<Mark> => {
          const all = await Promise.all(workers.map((w) => w.stats()));
          const queries = new Map<string, number>();
          for (const st of all) for (const [q, n] of Object.entries(st.queries ?? {})) queries.set(q, (queries.get(q) ?? 0) + n);
          return { c, cpu: all.reduce((a, b) => a + b.cpuUs, 0), pg: all.reduce((a, b) => a + b.pgQueries, 0), redis: all.reduce((a, b) => a + b.redisCommands, 0), queries, pgCpu: readPostgresCpu() };
        };
        await waitArrivals(target, 180_000, async (c) => {
          if (!marks[0] && c >= from) marks[0] = await statsAll(c);
          if (!marks[1] && c >= 0.9 * target) marks[1] = await statsAll(c);
        });
        await stopWorkers();
        const arrivals = (await receiver.call<Arrival[]>('arrivals')).sort((a, b) => a.at - b.at);
        // between the later of the 10 % arrival and every worker ready, and the 90 % arrival
        const i10 = Math.max(Math.floor(0.1 * arrivals.length), arrivals.findIndex((a) => a.at >= allReady));
        const i90 = Math.floor(0.9 * arrivals.length);
        const rps = (i90 - i10) / ((arrivals[i90].at - arrivals[i10].at) / 1000);
        const [m0, m1] = marks;
        const between = m0 && m1 ? Math.max(1, m1.c - m0.c) : NaN;
        const cpuPer = m0 && m1 ? (m1.cpu - m0.cpu) / between : NaN;
        const pgPer = m0 && m1 ? (m1.pg - m0.pg) / between : NaN;
        const redisPer = m0 && m1 ? (m1.redis - m0.redis) / between : NaN;
        const pgCpuPer = m0?.pgCpu && m1?.pgCpu ? Math.round(postgresCpuBetween(m0.pgCpu, m1.pgCpu) / between) : '';
        if (m0 && m1 && m1.queries.size) printQueriesPerDelivery(`${count} worker(s)`, m0.queries, m1.queries, between);
        const dup = arrivals.length - new Set(arrivals.map((a) => a.eventId)).size;
        if (count === 1) one = rps;
        rows.push({ measure: `webhook deliveries, ${count} worker process${count > 1 ? 'es' : ''}`, 'deliveries/s': Math.round(rps), '% of raw': r1((100 * rps) / rawRun.rps), 'scaling vs 1 worker': one ? Number((rps / one).toFixed(2)) : '', 'CPU µs/delivery': Math.round(cpuPer), 'PostgreSQL CPU µs/delivery': pgCpuPer, 'PG rt/delivery': r1(pgPer), 'Redis cmd/delivery': r1(redisPer), n: arrivals.length, dup });
        figures.push(
          { id: `webhook_deliveries_per_s_w${count}`, figure: `Sustained deliveries/s, ${count} worker process${count > 1 ? 'es' : ''}${one && count > 1 ? ` (×${(rps / one).toFixed(2)} of 1 worker)` : ''}`, value: Math.round(rps), unit: '/s', baseline: 'raw undici keep-alive HTTPS POSTs/s, same receiver', baselineValue: Math.round(rawRun.rps), ratioPct: r1((100 * rps) / rawRun.rps), ...(count === 1 ? { target: '≥ 25 % of raw', met: rps >= 0.25 * rawRun.rps } : count === 2 && one ? { target: '≥ 1 worker\'s deliveries/s', met: rps >= one } : {}) },
          { id: `webhook_cpu_us_per_delivery_w${count}`, figure: `Worker CPU µs per delivery, ${count} worker process${count > 1 ? 'es' : ''}`, value: Math.round(cpuPer), unit: 'µs', baseline: 'raw undici client CPU µs per POST', baselineValue: Math.round(rawRun.cpuUs) },
        );
      }
    }
    return {
      title: `Webhook delivery: real API → outbox → worker process(es) → HTTPS receiver on loopback; ${ACCOUNTS} accounts × 1 endpoint`,
      rows,
      figures,
      notes: [
        `Latency: messages posted through the API at a steady rate (open loop), each raising ${EVENTS_PER_POST} events (message.posted + a mention), each event one delivery; ${LOW_RATE ? `${LOW_RATE} then ` : ''}${RATE} events/s offered, ${DURATION_S} s measured after ${WARMUP_S} s. latency = receiver arrival − the API's 2xx answer to the post (one clock). If the API or the worker cannot keep up with the offered rate, the backlog shows as latency.`,
        `Accounts: ${ACCOUNTS} scale accounts × 2 seats × 1 endpoint (message.posted + mention, pointers), round-robin. Limits ON in the workers: every attempt takes an in-flight lease (cap max(4, ceil(2/25)) = 4 per account) and charges a call unit (65,000/day per seat); load is spread over accounts, no limit raised.`,
        `Throughput: ${BACKLOG} events (${Math.ceil(BACKLOG / EVENTS_PER_POST)} posts) committed through the API with no worker running, then W workers start together; deliveries/s between the 10 % arrival (or the first after every worker is ready, if later) and the 90 % arrival; CPU µs, PG round trips and Redis commands per delivery = Σ over the workers between the same marks ÷ deliveries; PostgreSQL CPU µs per delivery = every PostgreSQL process of the host (/proc) between the same marks ÷ deliveries. Raw baseline: ${RAW_CONNECTIONS} keep-alive connections from one process (the bench), ${RAW_DURATION_S} s, CPU of that process.`,
        'Every process (API, workers, receiver, PostgreSQL, Redis, the bench) shares the same 2 cores: more than 2 worker processes cannot add wall-clock throughput; CPU µs/delivery does not depend on the core count.',
        ...notes,
      ],
    };
  } finally {
    await stopWorkers().catch(() => undefined);
    await api.close().catch(() => undefined);
    await raw.close().catch(() => undefined);
    await server.close();
    await receiver.close();
    await deps.close();
  }
}

/** BENCH_QUERY_LOG=1: each query text sent by the workers between two marks, per delivery, most frequent first. */
function printQueriesPerDelivery(label: string, before: ReadonlyMap<string, number>, after: ReadonlyMap<string, number>, deliveries: number): void {
  // Per delivery to three places, and its inverse: deliveries per call (the rows a batch
  // statement such as the claim or the close carries, when each delivery is one of its rows).
  console.log(`worker queries per delivery (and deliveries per call), ${label}:`);
  const sent = [...after].map(([q, n]) => [q, n - (before.get(q) ?? 0)] as const).filter(([, n]) => n > 0).sort((a, b) => b[1] - a[1]);
  for (const [q, n] of sent) console.log(`  ${(n / Math.max(1, deliveries)).toFixed(3)} (${(deliveries / n).toFixed(1)})  ${q}`);
}
