/**
 * `npm run bench -- scale`: the service at a year's data volumes (docs/performance.md "Data
 * volumes"). Seeds, in SQL, 10,000,000 delivery-log rows over 30 days across 2,000 endpoints of
 * one account (one hot endpoint holds 10 % of them), 1,000,000 messages in 200 channels and
 * 50,000 identities; then measures through the API (HTTP on loopback, one request at a time)
 * each route next to the same route on an empty account in the same run.
 *
 * BENCH_SCALE_FACTOR (default 1) multiplies every size, for development (0.01: 100,000 rows).
 * BENCH_SCALE_RUNS (default 200) requests per route, after 10 unmeasured.
 * BENCH_SCALE_PROCESSES=<A>x<W> (e.g. 2x2) serves the routes from A API processes (each request to
 * the next one, as a load balancer would) while W worker processes run beside them (their relay,
 * sweep and maintenance passes on the same database); unset, one API in the bench process.
 *
 * How the log is seeded: each week's partition is filled as a plain table, indexed, then swapped
 * in for the migration's empty partition (ATTACH, the foreign key validated), as a restore would;
 * the rollups are computed from the seeded rows by the same rules as the triggers. The
 * messages' two search GIN indexes are dropped before the messages are written and not rebuilt
 * (the page read does not use them; search at this size is `npm run bench -- search`).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { PgDialect } from 'drizzle-orm/pg-core';
import type { BenchContext, BenchResult, Figure } from './run';
import { startServer, type BenchServer } from './support/child';
import { startWorkerProcess, type WorkerProcess } from './support/processes';

const FACTOR = Number(process.env.BENCH_SCALE_FACTOR ?? 1);
const RUNS = Number(process.env.BENCH_SCALE_RUNS ?? 200);
const PROCESSES = /^(\d+)x(\d+)$/.exec(process.env.BENCH_SCALE_PROCESSES ?? '');
const DELIVERIES = Math.round(10_000_000 * FACTOR);
const ENDPOINTS = Math.max(60, Math.round(2_000 * FACTOR));
const MESSAGES = Math.round(1_000_000 * FACTOR);
const CHANNELS = 200;
const IDENTITIES = Math.max(100, Math.round(50_000 * FACTOR));
const DAYS = 30;
const PAGE = 50;
const DAY_MS = 24 * 3_600_000;

interface Seeded {
  big: { accountId: string; key: string; hot: string; channel: string; eventId: string };
  empty: { accountId: string; key: string; hot: string; channel: string };
  timings: Record<string, number>;
}

async function timed<T>(timings: Record<string, number>, name: string, f: () => Promise<T>): Promise<T> {
  const t = performance.now();
  const out = await f();
  timings[name] = Math.round(performance.now() - t);
  return out;
}

async function account(core: typeof import('@teamchat/core'), deps: import('@teamchat/core').Deps, label: string) {
  const db = deps.database.db;
  const email = `scale-${label}-${core.randomToken(6)}@example.test`;
  const acct = await core.openAccount(db, { plan: 'scale', ownerEmail: email, ownerPassword: 'bench password 1' });
  const member = (await core.getMemberByEmail(db, acct.account_id, email))!;
  const { key } = await db.transaction((tx) => core.createApiKey(tx, {
    accountId: acct.account_id, userId: member.userId, identityId: member.identityId, role: 'owner', scopes: ['webhooks:manage'], readOnly: false,
  }));
  return { accountId: acct.account_id, userId: member.userId, identityId: member.identityId, key };
}

/** Endpoints of an account, `ep_<label>_00001`… in seq order (the first one is the hot one). */
async function endpoints(c: Client, a: { accountId: string; userId: string }, label: string, n: number, secretEnc: string): Promise<string> {
  await c.query(`
    INSERT INTO webhook_endpoints (id, account_id, created_by_user_id, created_via, url, events, all_channels, channel_ids, payload, enabled, enabled_at, secret_enc)
    SELECT 'whe_${label}_' || lpad(g::text, 5, '0'), $1, $2, 'web_session', 'https://hooks.example.test/' || g,
           ARRAY['message.posted', 'mention', 'reaction.added', 'message.deleted'], true, '{}', 'pointers', true, now() - interval '40 days', $3
      FROM generate_series(1, ${n}) g ORDER BY g`, [a.accountId, a.userId, secretEnc]);
  return `whe_${label}_00001`;
}

/** Messages of one channel or many: `perChannel` messages in each of `channels`, authors spread over the identities. */
async function messages(c: Client, accountId: string, channels: string[], total: number, authors: string) {
  await c.query(`
    INSERT INTO messages (channel_id, ts_micros, account_id, author_identity_id, text, mentions)
    SELECT ($1::text[])[1 + g % ${channels.length}], 1700000000000000 + g * 1000, $2, ${authors},
           'scale bench message ' || g || ' about w' || (g % 977), '{}'
      FROM generate_series(1, ${total}) g`, [channels, accountId]);
}

async function seed(c: Client, core: typeof import('@teamchat/core'), deps: import('@teamchat/core').Deps): Promise<Seeded> {
  const timings: Record<string, number> = {};
  // the seed's sorts, aggregates and index builds in memory (this session only; 24 GiB here)
  await c.query("SET work_mem = '256MB'");
  await c.query("SET maintenance_work_mem = '1GB'");
  const big = await account(core, deps, 'big');
  const empty = await account(core, deps, 'empty');
  const secretEnc = core.sealWebhookSecret(deps.config, core.generateSigningSecret());
  const hot = await endpoints(c, big, 'big', ENDPOINTS, secretEnc);
  const emptyHot = await endpoints(c, empty, 'empty', PAGE, secretEnc);

  // identities, channels, messages
  await timed(timings, 'identities', () => c.query(`
    INSERT INTO identities (id, account_id, kind, name)
    SELECT 'idn_scale' || g, $1, 'agent', 'agent ' || g FROM generate_series(1, ${IDENTITIES}) g`, [big.accountId]));
  const channelsOf = async (a: { accountId: string; identityId: string }, prefix: string, n: number) => {
    const ids = Array.from({ length: n }, (_, i) => `ch_${prefix}${i + 1}`);
    await c.query(`INSERT INTO channels (id, account_id, kind, name, created_by_identity_id)
                   SELECT id, $1, 'channel', 'bench-' || id, $2 FROM unnest($3::text[]) id`, [a.accountId, a.identityId, ids]);
    await c.query(`INSERT INTO channel_members (channel_id, identity_id, account_id) SELECT id, $2, $1 FROM unnest($3::text[]) id`, [a.accountId, a.identityId, ids]);
    return ids;
  };
  const bigChannels = await channelsOf(big, 'scaleb', CHANNELS);
  const [emptyChannel] = await channelsOf(empty, 'scalee', 1);
  await c.query('DROP INDEX IF EXISTS messages_search_idx; DROP INDEX IF EXISTS messages_text_trgm_idx');
  await timed(timings, 'messages', () => messages(c, big.accountId, bigChannels, MESSAGES, `'idn_scale' || (1 + g % ${IDENTITIES})`));
  await messages(c, empty.accountId, [emptyChannel], 60, `'${empty.identityId}'`);

  // the delivery log, week by week
  const end = Date.now();
  const start = end - DAYS * DAY_MS;
  const step = (end - start) / DELIVERIES;
  await timed(timings, 'bodies', () => c.query(`
    INSERT INTO webhook_bodies (id, account_id, event_id, event_type, mode, body, created_at)
    SELECT 'whb_s' || e, $1, 'evt_s' || e, 'message.posted', 'pointers', '{"id":"evt_s' || e || '"}', to_timestamp(${start / 1000} + e * 8 * ${step / 1000})
      FROM generate_series(0, ${Math.ceil(DELIVERIES / 8)}) e`, [big.accountId]));
  const indexDefs = (await c.query<{ def: string }>(`
    SELECT pg_get_indexdef(i.indexrelid) AS def FROM pg_index i JOIN pg_class t ON t.oid = i.indrelid
     WHERE t.relname = 'webhook_deliveries' AND NOT i.indisprimary`)).rows.map((r) => r.def);
  const parts = await core.deliveryLogPartitions(deps.database.db);
  let loaded = 0;
  await timed(timings, 'deliveries', async () => {
    for (const p of parts) {
      if (p.to.getTime() <= start || p.from.getTime() > end) continue;
      const lo = Math.max(1, Math.floor((p.from.getTime() - start) / step) - 1);
      const hi = Math.min(DELIVERIES, Math.ceil((p.to.getTime() - start) / step) + 1);
      const tmp = `${p.name}_load`;
      await c.query(`CREATE TABLE ${tmp} (LIKE webhook_deliveries INCLUDING DEFAULTS)`);
      const r = await c.query(`
        INSERT INTO ${tmp} (id, seq, account_id, endpoint_id, event_id, event_type, body_id, kind, chain_id, attempt, status,
                            next_retry_at, response_status, latency_ms, error, event_created_at, created_at, attempted_at)
        SELECT 'dlv_s' || g, g, $1,
               CASE WHEN g % 10 = 0 THEN '${hot}' ELSE 'whe_big_' || lpad((2 + g % ${ENDPOINTS - 1})::text, 5, '0') END,
               'evt_s' || (g / 8), ty, 'whb_s' || (g / 8), 'event', 'dlv_s' || g, 1, st,
               CASE WHEN st = 'retrying' THEN now() + interval '1 hour' END,
               CASE st WHEN 'delivered' THEN 200 WHEN 'retrying' THEN NULL ELSE 503 END,
               CASE WHEN st = 'retrying' THEN NULL ELSE lat END,
               CASE WHEN st IN ('failed', 'dead') THEN 'status 503' END,
               t, t, CASE WHEN st = 'retrying' THEN NULL ELSE t + lat * interval '1 millisecond' END
          FROM (
            SELECT g, t,
                   CASE WHEN h < 93 THEN 'delivered' WHEN h < 97 THEN 'failed' WHEN h < 99 THEN 'dead'
                        WHEN t > now() - interval '1 day' THEN 'retrying' ELSE 'dead' END AS st,
                   CASE WHEN k < 60 THEN 'message.posted' WHEN k < 90 THEN 'mention' WHEN k < 99 THEN 'reaction.added' ELSE 'message.deleted' END AS ty,
                   CASE WHEN l < 95 THEN 20 + l * 3 ELSE 500 + l * 40 END AS lat
              FROM (SELECT g, to_timestamp(${start / 1000} + g * ${step / 1000}) AS t,
                           abs(hashint8(g)) % 100 AS h, abs(hashint8(g + 7)) % 100 AS k, abs(hashint8(g + 13)) % 100 AS l
                      FROM generate_series(${lo}, ${hi}) g) x
             WHERE t >= '${p.from.toISOString()}' AND t < '${p.to.toISOString()}' AND t <= now()) y`, [big.accountId]);
      loaded += r.rowCount ?? 0;
      await c.query(`ALTER TABLE ${tmp} ADD PRIMARY KEY (id, created_at)`);
      for (const def of indexDefs) {
        await c.query(def.replace(/INDEX \S+ ON (ONLY )?public\.webhook_deliveries /, `INDEX ON ${tmp} `));
      }
      await c.query(`ALTER TABLE ${tmp} ADD CONSTRAINT ${tmp}_range CHECK (created_at >= '${p.from.toISOString()}' AND created_at < '${p.to.toISOString()}')`);
      await c.query(`ALTER TABLE webhook_deliveries DETACH PARTITION ${p.name}`);
      await c.query(`DROP TABLE ${p.name}`);
      await c.query(`ALTER TABLE ${tmp} RENAME TO ${p.name}`);
      await c.query(`ALTER TABLE webhook_deliveries ATTACH PARTITION ${p.name} FOR VALUES FROM ('${p.from.toISOString()}') TO ('${p.to.toISOString()}')`);
      await c.query(`ALTER TABLE ${p.name} DROP CONSTRAINT ${tmp}_range`);
    }
    await c.query(`SELECT setval('webhook_deliveries_seq_seq', ${DELIVERIES + 1})`);
  });
  // the rollups, by the triggers' rules (migration 0006), from the rows as seeded
  await timed(timings, 'rollups', async () => {
    await c.query(`
      INSERT INTO webhook_endpoint_hours (endpoint_id, hour, delivered, failed, dead, other, hist)
      SELECT endpoint_id, hour, sum(delivered), sum(failed), sum(dead), 0, jsonb_object_agg(b, n)
        FROM (SELECT endpoint_id, date_trunc('hour', attempted_at, 'UTC') AS hour, webhook_latency_bucket(latency_ms)::text AS b, count(*) AS n,
                     count(*) FILTER (WHERE status = 'delivered') AS delivered,
                     count(*) FILTER (WHERE status IN ('failed', 'retrying')) AS failed,
                     count(*) FILTER (WHERE status = 'dead') AS dead
                FROM webhook_deliveries WHERE attempted_at IS NOT NULL GROUP BY 1, 2, 3) x
       GROUP BY endpoint_id, hour`);
    await c.query(`
      INSERT INTO webhook_endpoint_health (endpoint_id, open_count, last_success_at, last_failure_at, recent)
      SELECT e.id, o.n, s.at, f.at, COALESCE(r.recent, '[]')
        FROM webhook_endpoints e
        LEFT JOIN LATERAL (SELECT count(*) AS n FROM webhook_deliveries d WHERE d.endpoint_id = e.id AND d.status IN ('pending', 'retrying')) o ON true
        LEFT JOIN LATERAL (SELECT max(attempted_at) AS at FROM webhook_deliveries d WHERE d.endpoint_id = e.id AND d.status = 'delivered' AND d.created_at > now() - interval '1 day') s ON true
        LEFT JOIN LATERAL (SELECT max(attempted_at) AS at FROM webhook_deliveries d WHERE d.endpoint_id = e.id AND d.status IN ('failed', 'dead') AND d.created_at > now() - interval '3 days') f ON true
        LEFT JOIN LATERAL (SELECT jsonb_agg(jsonb_build_array(seq, latency_ms) ORDER BY seq) AS recent
                             FROM (SELECT seq, latency_ms FROM webhook_deliveries d WHERE d.endpoint_id = e.id AND d.latency_ms IS NOT NULL
                                    ORDER BY seq DESC LIMIT 50) l) r ON true
       WHERE e.account_id = $1`, [big.accountId]);
  });
  await timed(timings, 'analyze', async () => {
    for (const t of ['webhook_deliveries', 'webhook_bodies', 'messages', 'webhook_endpoint_hours', 'webhook_endpoint_health', 'identities']) await c.query(`VACUUM ANALYZE ${t}`);
  });
  timings.loaded_rows = loaded;
  const ev = await c.query<{ event_id: string }>(`SELECT event_id FROM webhook_deliveries WHERE endpoint_id = $1 AND created_at > now() - interval '10 days' LIMIT 1`, [hot]);
  return {
    big: { accountId: big.accountId, key: big.key, hot, channel: bigChannels[0], eventId: ev.rows[0]?.event_id ?? 'evt_none' },
    empty: { accountId: empty.accountId, key: empty.key, hot: emptyHot, channel: emptyChannel },
    timings,
  };
}

function pct(sorted: number[], p: number): number {
  return Number(sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)].toFixed(1));
}

/** `RUNS` sequential GETs (after 10 unmeasured), each checked for 200: p50 and p99 in ms. */
async function measure(bases: string[], key: string, path: string): Promise<{ p50: number; p99: number }> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: bases.length });
  let n = 0;
  const get = () => new Promise<number>((resolve, reject) => {
    const t = performance.now();
    const req = http.get(`${bases[n++ % bases.length]}${path}`, { agent, headers: { authorization: `Bearer ${key}` } }, (res) => {
      res.resume();
      res.on('end', () => (res.statusCode === 200 ? resolve(performance.now() - t) : reject(new Error(`${path}: ${res.statusCode}`))));
    });
    req.on('error', reject);
  });
  for (let i = 0; i < 10; i += 1) await get();
  const ms: number[] = [];
  for (let i = 0; i < RUNS; i += 1) ms.push(await get());
  agent.destroy();
  ms.sort((a, b) => a - b);
  return { p50: pct(ms, 50), p99: pct(ms, 99) };
}

export default async function scaleBench(ctx: BenchContext): Promise<BenchResult> {
  const core = await import('@teamchat/core');
  const { createApp } = await import('../apps/api/src/app');
  const high = (p: 'starter' | 'pro' | 'scale') => ({ ...core.PLAN_LIMITS[p], callsPerMinute: 1_000_000_000, unitsPerDay: 1_000_000_000 });
  const env = { NODE_ENV: 'development', DATABASE_URL: ctx.databaseUrl, REDIS_URL: ctx.redisUrl, LOG_LEVEL: 'warn' };
  const deps = core.createDeps(core.loadConfig(env, {
    secretsKey: randomBytes(32).toString('hex'), redisPrefix: `bench-scale-${core.randomToken(6)}`, limitsEnabled: false,
    planLimits: { starter: high('starter'), pro: high('pro'), scale: high('scale') },
  }), 'api', { poolSize: 10 });
  await core.waitReady(deps.redis);
  const c = new Client({ connectionString: ctx.databaseUrl });
  await c.connect();
  const server = http.createServer(createApp(deps, 'api'));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  let bases = [`http://127.0.0.1:${(server.address() as AddressInfo).port}`];
  const apis: BenchServer[] = [];
  const workers: WorkerProcess[] = [];
  try {
    const t0 = performance.now();
    const s = await seed(c, core, deps);
    const seedMs = Math.round(performance.now() - t0);
    // The processes start on the seeded data (a worker's maintenance pass would contend with the seed's ATTACHes).
    if (PROCESSES) {
      for (let i = 0; i < Number(PROCESSES[1]); i += 1) apis.push(await startServer(ctx));
      for (let i = 0; i < Number(PROCESSES[2]); i += 1) {
        workers.push(await startWorkerProcess({
          NODE_ENV: 'development', DATABASE_URL: ctx.databaseUrl, REDIS_URL: ctx.redisUrl, REDIS_PREFIX: deps.config.redisPrefix,
          SECRETS_KEY: deps.config.secretsKey, LOG_LEVEL: 'info',
        }));
      }
      bases = apis.map((a) => `http://127.0.0.1:${a.ready.ports.off}`);
    }
    const since = (ms: number) => encodeURIComponent(new Date(Date.now() - ms).toISOString());
    const log = (a: { accountId: string; hot: string }, q: string) => `/accounts/${a.accountId}/webhooks/${a.hot}/deliveries?limit=${PAGE}${q}`;
    const filters: Array<{ id: string; name: string; q: string }> = [
      { id: 'none', name: 'no filter', q: '' },
      { id: 'status_dead', name: 'status=dead', q: '&status=dead' },
      { id: 'status_dead_failed', name: 'status=dead,failed', q: '&status=dead,failed' },
      { id: 'status_open', name: 'status=pending,retrying', q: '&status=pending,retrying' },
      { id: 'status_all', name: 'status: all five', q: '&status=pending,delivered,retrying,failed,dead' },
      { id: 'type_rare', name: 'event_type=message.deleted (1 %)', q: '&event_type=message.deleted' },
      { id: 'type_common', name: 'event_type=mention (30 %)', q: '&event_type=mention' },
      { id: 'range_24h', name: 'since 24 h', q: `&since=${since(DAY_MS)}` },
      { id: 'range_7d', name: 'since 7 d', q: `&since=${since(7 * DAY_MS)}` },
      { id: 'event_id', name: 'event_id', q: '' },
      { id: 'combo', name: 'status=failed,dead + event_type=message.deleted + since 7 d', q: `&status=failed,dead&event_type=message.deleted&since=${since(7 * DAY_MS)}` },
    ];
    const routes: Array<{ id: string; figure: string; big: string; empty: string; target?: { ms?: number; ratio?: number } }> = [
      { id: 'webhooks_list', figure: `GET /webhooks (page of ${PAGE}, with health)`, big: `/accounts/${s.big.accountId}/webhooks?limit=${PAGE}`, empty: `/accounts/${s.empty.accountId}/webhooks?limit=${PAGE}`, target: { ms: 50 } },
      ...filters.map((f) => ({
        id: `log_${f.id}`, figure: `Delivery log page, ${f.name}`,
        big: f.id === 'event_id' ? log(s.big, `&event_id=${s.big.eventId}`) : log(s.big, f.q),
        empty: f.id === 'event_id' ? log(s.empty, `&event_id=${s.big.eventId}`) : log(s.empty, f.q),
        target: { ms: 20 },
      })),
      { id: 'stats_24h', figure: 'Endpoint stats, 24 h', big: `/accounts/${s.big.accountId}/webhooks/${s.big.hot}/stats?window=24h`, empty: `/accounts/${s.empty.accountId}/webhooks/${s.empty.hot}/stats?window=24h`, target: { ms: 100 } },
      { id: 'stats_7d', figure: 'Endpoint stats, 7 days', big: `/accounts/${s.big.accountId}/webhooks/${s.big.hot}/stats?window=7d`, empty: `/accounts/${s.empty.accountId}/webhooks/${s.empty.hot}/stats?window=7d`, target: { ms: 100 } },
      { id: 'channel_page', figure: 'Channel message page of 50', big: `/accounts/${s.big.accountId}/channels/${s.big.channel}/messages?limit=50`, empty: `/accounts/${s.empty.accountId}/channels/${s.empty.channel}/messages?limit=50`, target: { ratio: 1.5 } },
    ];
    const rows: Array<Record<string, string | number>> = [];
    const figures: Figure[] = [];
    for (const r of routes) {
      const e = await measure(bases, s.empty.key, r.empty);
      const b = await measure(bases, s.big.key, r.big);
      const met = r.target?.ms !== undefined ? b.p99 <= r.target.ms : r.target?.ratio !== undefined ? b.p99 <= r.target.ratio * e.p99 : undefined;
      rows.push({ route: r.figure, 'big p50': b.p50, 'big p99': b.p99, 'empty p50': e.p50, 'empty p99': e.p99, target: r.target?.ms !== undefined ? `p99 ≤ ${r.target.ms} ms` : `p99 ≤ ${r.target?.ratio}× empty` });
      figures.push({
        id: `scale_${r.id}_p99_ms`, figure: `Scale: ${r.figure}: p99`, value: b.p99, unit: 'ms',
        baseline: 'same route, empty account (p99)', baselineValue: e.p99,
        ...(met !== undefined ? { target: r.target?.ms !== undefined ? `≤ ${r.target.ms} ms` : `≤ ${r.target?.ratio}× empty`, met } : {}),
      });
    }
    // EXPLAIN (ANALYZE, BUFFERS) of the log's statements on the hot endpoint, as listDeliveryLog builds them
    const dialect = new PgDialect();
    const explain = async (name: string, filter: import('@teamchat/core').DeliveryLogFilter) => {
      const q = dialect.sqlToQuery(core.deliveryLogStatement(s.big.hot, filter, { limit: PAGE, after: null }, new Date()));
      const out = await c.query(`EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) ${q.sql}`, q.params);
      return [`plan, ${name}:`, ...out.rows.map((x) => x['QUERY PLAN'] as string)];
    };
    const sizes = (await c.query(`SELECT pg_size_pretty(sum(pg_total_relation_size(c.oid))) AS log,
        (SELECT pg_size_pretty(pg_total_relation_size('webhook_endpoint_hours'))) AS hours,
        (SELECT count(*) FROM webhook_endpoint_hours) AS hour_rows
      FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'webhook_deliveries'::regclass`)).rows[0];
    const notes = [
      `sizes: ${s.timings.loaded_rows} delivery rows over ${DAYS} days across ${ENDPOINTS} endpoints (hot endpoint: 10 %), ${MESSAGES} messages in ${CHANNELS} channels, ${IDENTITIES} identities; log with indexes ${sizes.log}; hourly rollups ${sizes.hour_rows} rows, ${sizes.hours}`,
      `seed ${Math.round(seedMs / 1000)} s: ${Object.entries(s.timings).filter(([k]) => k !== 'loaded_rows').map(([k, v]) => `${k} ${Math.round(v / 1000)} s`).join(', ')}`,
      `each route: ${RUNS} sequential requests over keep-alive HTTP after 10 unmeasured; the empty account has ${PAGE} endpoints, no deliveries, and a channel of 60 messages`,
      ...(await explain('no filter', {})),
      ...(await explain('status=dead,failed', { statuses: ['dead', 'failed'] })),
      ...(await explain('event_type=message.deleted', { eventType: 'message.deleted' })),
      ...(await explain('event_id', { eventId: s.big.eventId })),
      ...(await explain('since 24 h', { since: new Date(Date.now() - DAY_MS) })),
    ];
    return { title: `Data volumes (${DELIVERIES} delivery rows, factor ${FACTOR}${PROCESSES ? `, ${PROCESSES[1]} API + ${PROCESSES[2]} worker processes` : ''}), p50/p99 ms next to an empty account`, rows, figures, notes };
  } finally {
    await Promise.all(workers.map((w) => w.stop()));
    await Promise.all(apis.map((a) => a.close()));
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await deps.close();
    await c.end();
  }
}
