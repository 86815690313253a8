/**
 * `npm run bench -- isolation`: one account's broken receiver must not delay another account
 * (docs/webhooks.md "Isolation between accounts", docs/performance.md). Real API process
 * (bench/support/server.ts), one real worker process (limits on, answer time as configured:
 * WEBHOOK_TIMEOUT_MS, 10 s), the HTTPS receiver (bench/support/receiver.ts) with misbehaving paths.
 *
 * Account B posts BENCH_ISO_RATE (50) messages/s through the API for BENCH_ISO_DURATION (10) s
 * after 1 s, one delivery each to a healthy receiver; latency = receiver arrival − the API's 2xx
 * (commit). First B alone; then, for each of A's receivers (BENCH_ISO_MODES: `hang` never
 * answers, `fail` answers 500 at once, `slow9` answers 2xx after 9 s), a fresh account A gets
 * BENCH_ISO_BACKLOG (100,000) events committed at once (copies of one real posted event, by
 * SQL), which the worker fans out into 100,000 deliveries waiting on A's receiver; once they are
 * all written, B posts again. Target: B's p99 with A's backlog ≤ 1.5 × B alone + 10 ms, in the
 * same run. A's backlog is closed by SQL after each scenario.
 *
 * Before each of B's measurements (B alone too) a CHECKPOINT: the SQL seeding of A's backlog and
 * its fan-out write ~540 MB of WAL, whose checkpoint otherwise ran during B's 10 s (its sync
 * took up to 1.1 s and stalled every commit: B's p99 48-60 ms in rows where A's receiver got 30
 * requests). The seeding is the bench's, not A's: a real backlog builds up over time.
 */
import { randomBytes } from 'node:crypto';
import { Pool } from 'undici';
import * as core from '@teamchat/core';
import { sql, withUnboundedDatabase } from '@teamchat/db';
import { startServer } from './support/child';
import { startReceiverProcess, startWorkerProcess, type WorkerProcess } from './support/processes';
import type { Arrival } from './support/receiver';
import { seedWebhookAccounts, type BenchAccount } from './support/webhook-seed';
import { now, paced, pct, r1, sleep, spread } from './support/pace';
import type { BenchContext, BenchResult, Figure } from './run';

const num = (name: string, dflt: number) => Number(process.env[name] ?? dflt);
const RATE = num('BENCH_ISO_RATE', 50);
const DURATION_S = num('BENCH_ISO_DURATION', 10);
const BACKLOG = num('BENCH_ISO_BACKLOG', 100_000);
const MODES = (process.env.BENCH_ISO_MODES ?? 'hang,fail,slow9').split(',').filter(Boolean) as Array<'hang' | 'fail' | 'slow9'>;
const WARMUP_S = 1;
const DESCRIBE = { hang: 'hangs (no answer; the answer time ends each attempt)', fail: 'answers 500 at once', slow9: 'answers 2xx after 9 s' } as const;

interface Posted { key: string; answeredAt: number; sentAt: number }

async function post(api: Pool, a: BenchAccount, text: string): Promise<Posted | null> {
  const sentAt = now();
  const res = await api.request({
    method: 'POST', path: `/accounts/${a.accountId}/channels/${a.channel}/messages`,
    headers: { authorization: `Bearer ${a.key}`, 'content-type': 'application/json' }, body: JSON.stringify({ text }),
  });
  const answeredAt = now();
  const body = (await res.body.json()) as { ts?: string };
  return res.statusCode === 201 && body.ts ? { key: `${a.channel}|${body.ts}`, sentAt, answeredAt } : null;
}

export default async function isolationBench(ctx: BenchContext): Promise<BenchResult> {
  const receiver = await startReceiverProcess();
  const server = await startServer(ctx);
  const config = core.loadConfig({ NODE_ENV: 'test', DATABASE_URL: ctx.databaseUrl, REDIS_URL: ctx.redisUrl, LOG_LEVEL: 'silent' }, {
    secretsKey: randomBytes(32).toString('hex'),
    redisPrefix: `isobench-${core.randomToken(6)}`,
  });
  const deps = core.createDeps(config, 'bench', { poolSize: 4 });
  const db = deps.database.db;
  const apiUrl = `http://127.0.0.1:${server.ready.ports.off}`;
  const api = new Pool(apiUrl, { connections: 64, pipelining: 1 });
  const rxOrigin = `https://localhost:${receiver.port}`;
  let worker: WorkerProcess | null = null;
  const rows: Array<Record<string, string | number>> = [];
  const figures: Figure[] = [];
  const notes: string[] = [];
  try {
    const [b, ...as] = await seedWebhookAccounts(deps, apiUrl, 1 + MODES.length, rxOrigin);
    const count = async (q: ReturnType<typeof sql>) => Number((await db.execute<{ n: string }>(q)).rows[0].n);
    // Events of the run's earlier benches were never relayed: relayed first, unmeasured.
    worker = await startWorkerProcess({
      NODE_ENV: 'test', DATABASE_URL: ctx.databaseUrl, REDIS_URL: ctx.redisUrl, REDIS_PREFIX: config.redisPrefix, SECRETS_KEY: config.secretsKey,
      LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'info', LIMITS_ENABLED: 'true', WEBHOOK_ALLOWED_HOSTS: 'localhost', WEBHOOK_CA_FILE: receiver.caFile,
    });
    for (let waited = 0; waited < 300_000 && (await count(sql`SELECT count(*) AS n FROM events WHERE relayed_at IS NULL`)) > 0; waited += 200) await sleep(200);

    /** B posts at RATE for WARMUP_S + DURATION_S; its commit → receiver latencies after the warm-up. */
    const measureB = async () => {
      await receiver.call('reset');
      const t0 = now();
      const run = await paced(RATE, WARMUP_S + DURATION_S, (i) => post(api, b, `isolation bench, B's line ${i}`));
      const measured = new Map(run.results.filter((p): p is Posted => p !== null && p.sentAt >= t0 + WARMUP_S * 1000).map((p) => [p.key, p]));
      const all = run.results.filter((p) => p !== null).length;
      for (let waited = 0; waited < 60_000 && (await receiver.call<number>('count')) < all; waited += 100) await sleep(100);
      const lat: number[] = [];
      for (const a of await receiver.call<Arrival[]>('arrivals')) {
        const p = measured.get(`${a.channel}|${a.ts}`);
        if (p) lat.push(a.at - p.answeredAt);
      }
      // Where B's time went, from its rows: its post's transaction → fan-out written, then written →
      // recorded (dispatch, send, record). The first starts at the event's created_at, the start of
      // the post's transaction, so it holds the post's own commit (its WAL flush), which B's latency
      // (from the API's 2xx) does not: its p99 can pass the row's p99 where commits stall.
      const st = (await db.execute<{ post_to_written_ms: number; after_ms: number | null }>(sql`
        SELECT extract(epoch FROM e.relayed_at - e.created_at) * 1000 AS post_to_written_ms, extract(epoch FROM d.attempted_at - d.created_at) * 1000 AS after_ms
          FROM events e JOIN webhook_deliveries d ON d.event_id = e.id AND d.attempt = 1
         WHERE e.account_id = ${b.accountId} AND e.created_at >= to_timestamp(${(t0 + WARMUP_S * 1000) / 1000})`)).rows;
      const postToWritten = st.map((x) => Number(x.post_to_written_ms)).sort((x, y) => x - y);
      const after = st.filter((x) => x.after_ms !== null).map((x) => Number(x.after_ms)).sort((x, y) => x - y);
      const stages = `post → written ${r1(pct(postToWritten, 50))}/${r1(pct(postToWritten, 99))}, written → recorded ${r1(pct(after, 50))}/${r1(pct(after, 99))}`;
      return { lat: lat.sort((x, y) => x - y), missing: measured.size - lat.length, errors: run.errors, stages };
    };

    /** The seeding's dirty pages written out before B measures (see the header). */
    const checkpoint = () => db.execute(sql`CHECKPOINT`);
    await checkpoint();
    const alone = await measureB();
    const aloneP99 = pct(alone.lat, 99);
    rows.push({ measure: `B alone: ${RATE} posts/s, commit (API 2xx) → receiver`, ...spread(alone.lat), missing: alone.missing, 'B stages p50/p99 ms': alone.stages, 'A backlog': '', 'A requests': '', 'A endpoint after': '' });

    for (const [k, mode] of MODES.entries()) {
      const a = as[k];
      await db.execute(sql`UPDATE webhook_endpoints SET url = ${`${rxOrigin}/${mode}-${randomBytes(3).toString('hex')}`} WHERE id = ${a.endpointId}`);
      const template = await post(api, a, `isolation bench, A's line`);
      if (!template) throw new Error('A could not post');
      const [, ts] = template.key.split('|');
      const faulty0 = await receiver.call<number>('faulty');
      const tFan = now();
      // A's backlog: BACKLOG copies of the posted event, committed at once (the worker fans them
      // out); with no statement time bound, which a slow host's 100,000 inserts outlasted.
      await withUnboundedDatabase(config.databaseUrl, (unbounded) => unbounded.execute(sql`
        INSERT INTO events (id, account_id, type, channel_id, data, created_at)
        SELECT 'evt_iso' || md5(random()::text || g::text), e.account_id, e.type, e.channel_id, e.data, now()
          FROM events e, generate_series(1, ${BACKLOG}) g
         WHERE e.account_id = ${a.accountId} AND e.type = 'message.posted' AND e.data->>'ts' = ${ts}`));
      for (let waited = 0; waited < 300_000 && (await count(sql`SELECT count(*) AS n FROM events WHERE account_id = ${a.accountId} AND relayed_at IS NULL`)) > 0; waited += 200) await sleep(200);
      const fanS = (now() - tFan) / 1000;
      const waiting = await count(sql`SELECT count(*) AS n FROM webhook_deliveries WHERE account_id = ${a.accountId} AND status IN ('pending', 'retrying')`);
      await checkpoint();
      const r = await measureB();
      const ep = (await db.execute<{ enabled: boolean; disabled_reason: string | null }>(sql`SELECT enabled, disabled_reason FROM webhook_endpoints WHERE id = ${a.endpointId}`)).rows[0];
      const open = await count(sql`SELECT count(*) AS n FROM webhook_deliveries WHERE account_id = ${a.accountId} AND status IN ('pending', 'retrying')`);
      const faulty = (await receiver.call<number>('faulty')) - faulty0;
      rows.push({
        measure: `B with A's backlog on a receiver that ${DESCRIBE[mode]}`, ...spread(r.lat), missing: r.missing, 'B stages p50/p99 ms': r.stages,
        'A backlog': `${waiting} open when B started (fan-out ${r1(fanS)} s), ${open} after`, 'A requests': faulty, 'A endpoint after': ep.enabled ? 'enabled' : `disabled (${ep.disabled_reason})`,
      });
      const p99 = pct(r.lat, 99);
      const bound = 1.5 * aloneP99 + 10;
      figures.push({
        id: `isolation_${mode}_p99_ms`, figure: `Isolation: B's commit → receiver p99 while A's ${BACKLOG} deliveries wait on a receiver that ${DESCRIBE[mode]}`,
        value: r1(p99), unit: 'ms', baseline: `B alone, same run (${RATE} posts/s)`, baselineValue: r1(aloneP99), target: '≤ 1.5 × B alone + 10 ms', met: p99 <= bound && r.missing === 0,
      });
      // A's backlog ends here: endpoint off, open rows closed (the worker skips them as closed).
      await db.execute(sql`UPDATE webhook_endpoints SET enabled = false, disabled_reason = 'manual', disabled_at = now() WHERE id = ${a.endpointId}`);
      // 100,000 rows (and the log's rollup trigger over them): past the pool's statement bound on a slow machine.
      await withUnboundedDatabase(config.databaseUrl, (unbounded) => unbounded.execute(
        sql`UPDATE webhook_deliveries SET status = 'dead', error = 'bench: closed', claimed_until = NULL WHERE account_id = ${a.accountId} AND status IN ('pending', 'retrying')`));
    }
    return {
      title: `Isolation between accounts: B posts ${RATE}/s to a healthy receiver while A's ${BACKLOG} deliveries wait on a broken one (1 worker, limits on)`,
      rows,
      figures,
      notes: [
        `B: one account, one endpoint (message.posted), ${RATE} posts/s open loop for ${DURATION_S} s after ${WARMUP_S} s; latency = receiver arrival − the API's 2xx (commit). A: a fresh account per row, ${BACKLOG} events committed at once by SQL (copies of one posted message), fanned out by the worker before B starts; A's in-flight cap is 4 (2 seats). Answer time (WEBHOOK_TIMEOUT_MS) as configured: 10 s. 'A requests' = requests A's receiver got while B posted.`,
        'An endpoint whose median answer time passes 2 s is disabled `slow` by the engine (docs/webhooks.md "Automatic disabling"), which drops its open deliveries: the column "A endpoint after" says whether that happened during the row.',
        ...notes,
      ],
    };
  } finally {
    await worker?.stop().catch(() => undefined);
    await api.close().catch(() => undefined);
    await server.close();
    await receiver.close();
    await deps.close();
  }
}
