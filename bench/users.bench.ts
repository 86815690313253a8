/**
 * `npm run bench -- users`: what users get (docs/performance.md "As users see it"). For each way
 * of starting the service (BENCH_USERS_MODES, default `npm-start,compiled`):
 *
 * 1. the stack is started as users start it (bench/support/stack.ts: `npm start`'s processes, or
 *    the production image's commands on `npm run build`'s output), and the clock waits for the
 *    API's /readyz (as a load balancer does);
 * 2. a new account's owner signs in on the web host and registers an endpoint from that web
 *    session (enabled at once; `message.posted`, all channels) on the HTTPS receiver;
 * 3. right after, messages are posted through the API (8 channels, round-robin) at BENCH_USERS_RATE/s (200) for
 *    2 × BENCH_USERS_PHASE_S (10 s), one delivery each, open loop; latency = the receiver's
 *    arrival − the moment the client SENT the post (one clock), reported for the first phase
 *    (the target) and the second separately, split into send → 2xx and 2xx → receiver;
 * 4. one event's way through the stages (commit → relay → fan-out → send → answer), read from
 *    its rows, for the median and the p99 delivery of the first phase;
 * 5. (npm-start only) authenticated POST messages over 8 channels of another account (no
 *    endpoint), worker running, closed loop (autocannon, 32 connections) next to a bare Express
 *    JSON echo in its own process, in the same run.
 */
import fs from 'node:fs';
import { fork } from 'node:child_process';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import autocannon from 'autocannon';
import { Agent, Pool } from 'undici';
import * as core from '@teamchat/core';
import { sql } from '@teamchat/db';
import { startReceiverProcess } from './support/processes';
import type { Arrival } from './support/receiver';
import { buildDist, startStack, type Stack, type StackMode } from './support/stack';
import { COMMIT_PROBE, commitProbeSummary } from './support/commit-probe';
import { now, paced, pct, r1, sleep, spread } from './support/pace';
import type { BenchContext, BenchResult, Figure } from './run';

const num = (name: string, dflt: number) => Number(process.env[name] ?? dflt);
const RATE = num('BENCH_USERS_RATE', 200);
const PHASE_S = num('BENCH_USERS_PHASE_S', 10);
const MODES = (process.env.BENCH_USERS_MODES ?? 'npm-start,compiled').split(',').filter(Boolean) as StackMode[];
const ECHO_S = num('BENCH_DURATION', 10);
const ECHO_WARMUP_S = num('BENCH_WARMUP', 2);
const CONNECTIONS = num('BENCH_CONNECTIONS', 32);
/** BENCH_USERS_DUMP=<path>: each post of the latency part as one line of <path>.<mode>.tsv, and the first send's epoch ms in <path>.<mode>.tsv.t0 (dumpPosts) */
const DUMP = process.env.BENCH_USERS_DUMP;
/** BENCH_USERS_ONLY=latency,post8 picks the parts */
const ONLY = process.env.BENCH_USERS_ONLY?.split(',');
const want = (id: string) => !ONLY || ONLY.includes(id);

/** the web host's session cookie (apps/api/src/http/authenticate.ts) */
const SESSION_COOKIE = 'tc_session';

interface UserAccount { accountId: string; key: string; session: string; channels: string[] }

/** A new account whose owner signs in on the web host; `channels` channels made from that session. */
async function newUser(deps: core.Deps, stack: Stack, channels: number): Promise<UserAccount> {
  const email = `users-${core.randomToken(6)}@example.test`;
  const password = 'bench password 1';
  const acct = await core.openAccount(deps.database.db, { plan: 'scale', ownerEmail: email, ownerPassword: password });
  const member = (await core.getMemberByEmail(deps.database.db, acct.account_id, email))!;
  const signIn = await fetch(`${stack.webUrl}/auth/sign-in`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, password }) });
  if (signIn.status !== 200) throw new Error(`sign-in: ${signIn.status} ${await signIn.text()}`);
  const cookie = signIn.headers.getSetCookie().find((c) => c.startsWith(`${SESSION_COOKIE}=`));
  const session = decodeURIComponent(cookie!.split(';')[0].slice(SESSION_COOKIE.length + 1));
  const out: string[] = [];
  for (let i = 0; i < channels; i += 1) {
    const res = await fetch(`${stack.webUrl}/accounts/${acct.account_id}/channels`, { method: 'POST', headers: { authorization: `Bearer ${session}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: `users-${i}` }) });
    if (res.status !== 201) throw new Error(`create channel: ${res.status} ${await res.text()}`);
    out.push(((await res.json()) as { id: string }).id);
  }
  const { key } = await deps.database.db.transaction((tx) => core.createApiKey(tx, {
    accountId: acct.account_id, userId: member.userId, identityId: member.identityId, role: 'owner', scopes: [], readOnly: false,
  }));
  return { accountId: acct.account_id, key, session, channels: out };
}

interface Sent { key: string; sentAt: number; answeredAt: number }

/** One event's way, from its rows: ms after the client sent its post, as one line. */
async function stagesOf(deps: core.Deps, p: Sent, arrivalAt: number): Promise<string> {
  const [channel, ts] = p.key.split('|');
  const r = (await deps.database.db.execute<{ created_at: Date; relayed_at: Date | null; attempted_at: Date | null }>(sql`
    SELECT e.created_at, e.relayed_at, d.attempted_at
      FROM events e JOIN webhook_deliveries d ON d.event_id = e.id AND d.attempt = 1
     WHERE e.channel_id = ${channel} AND e.type = 'message.posted' AND e.data->>'ts' = ${ts}`)).rows[0];
  if (!r) return 'its rows were not found';
  const at = (d: Date | null) => (d ? `+${r1(new Date(d).getTime() - p.sentAt)}` : '?');
  return `post's transaction ${at(r.created_at)} → API 2xx at the client +${r1(p.answeredAt - p.sentAt)} → fan-out written (relayed_at) ${at(r.relayed_at)} → at the receiver +${r1(arrivalAt - p.sentAt)} → recorded (attempted_at) ${at(r.attempted_at)}`;
}

/**
 * Every post of a latency run, one tab-separated line each, in ms: sent (after the run's start),
 * then after its send: the API's 2xx, the arrival, the event's commit (created_at), the fan-out's
 * write (relayed_at), the attempt recorded (attempted_at); empty where there is none. Shows when
 * in the run the slow deliveries were, and at which stage.
 */
async function dumpPosts(deps: core.Deps, file: string, accountId: string, t0: number, sent: Sent[], arrivals: Map<string, Arrival>): Promise<void> {
  const rows = new Map((await deps.database.db.execute<{ k: string; c: Date; r: Date | null; a: Date | null }>(sql`
    SELECT e.channel_id || '|' || (e.data->>'ts') AS k, e.created_at AS c, e.relayed_at AS r, d.attempted_at AS a
      FROM events e JOIN webhook_deliveries d ON d.event_id = e.id AND d.attempt = 1
     WHERE e.account_id = ${accountId} AND e.type = 'message.posted'`)).rows.map((x) => [x.k, x]));
  const after = (d: Date | null | undefined, from: number) => (d ? r1(new Date(d).getTime() - from) : '');
  fs.writeFileSync(`${file}.t0`, String(t0));
  fs.writeFileSync(file, sent.map((p) => {
    const a = arrivals.get(p.key);
    const x = rows.get(p.key);
    return [r1(p.sentAt - t0), r1(p.answeredAt - p.sentAt), a ? r1(a.at - p.sentAt) : '', after(x?.c, p.sentAt), after(x?.r, p.sentAt), after(x?.a, p.sentAt)].join('\t');
  }).join('\n'));
}

/** The worker's stage histogram (teamchat_webhook_stage_seconds): sum and count per stage. */
async function stageSums(workerOps: string): Promise<Map<string, { sum: number; count: number }>> {
  const text = await (await fetch(`${workerOps}/metrics`)).text();
  const out = new Map<string, { sum: number; count: number }>();
  for (const m of text.matchAll(/^teamchat_webhook_stage_seconds_(sum|count)\{stage="([a-z_]+)"\} ([0-9.e+-]+)$/gm)) {
    const e = out.get(m[2]) ?? { sum: 0, count: 0 };
    e[m[1] as 'sum' | 'count'] = Number(m[3]);
    out.set(m[2], e);
  }
  return out;
}

/** A bare Express JSON echo in its own process: the baseline of the POST row. */
async function startEcho(): Promise<{ url: string; close(): void }> {
  const child = fork(path.join(__dirname, 'support', 'echo.ts'), [], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  const port = await new Promise<number>((resolve) => child.once('message', (m: { port: number }) => resolve(m.port)));
  return { url: `http://127.0.0.1:${port}`, close: () => child.kill('SIGTERM') };
}

export default async function usersBench(ctx: BenchContext): Promise<BenchResult> {
  const receiver = await startReceiverProcess();
  const config = core.loadConfig({ NODE_ENV: 'test', DATABASE_URL: ctx.databaseUrl, REDIS_URL: ctx.redisUrl, LOG_LEVEL: 'silent' }, { secretsKey: randomBytes(32).toString('hex') });
  const deps = core.createDeps(config, 'bench', { poolSize: 4 });
  const rxOrigin = `https://localhost:${receiver.port}`;
  const raw = new Agent({ connect: { ca: [fs.readFileSync(receiver.caFile, 'utf8')] }, connections: 64, keepAliveTimeout: 30_000 });
  const rows: Array<Record<string, string | number>> = [];
  const figures: Figure[] = [];
  const notes: string[] = [];
  try {
    // Baseline of the latency rows: raw undici POSTs to the same receiver at the same rate.
    const rawPost = async () => {
      const t = now();
      const res = await raw.request({ origin: rxOrigin, method: 'POST', path: '/raw', headers: { 'content-type': 'application/json' }, body: '{"type":"raw"}' });
      await res.body.dump();
      return now() - t;
    };
    await paced(RATE, 1, rawPost);
    const rawLat = (await paced(RATE, 3, rawPost)).results.sort((a, b) => a - b);
    rows.push({ measure: `baseline: raw undici POST round trip to the receiver, ${RATE}/s`, ...spread(rawLat) });

    for (const mode of MODES) {
      if (mode === 'compiled') notes.push(`npm run build: ${(await buildDist()).toFixed(0)} s`);
      const stack = await startStack(mode, { databaseUrl: ctx.databaseUrl, redisUrl: ctx.redisUrl, caFile: receiver.caFile });
      const api = new Pool(stack.apiUrl, { connections: 64, pipelining: 1 });
      try {
        // The run's database holds the earlier benches' events, never relayed: the stack's worker
        // relays them first (no endpoint matches), so the measurement starts on a settled service.
        for (let waited = 0; waited < 300_000; waited += 200) {
          if (Number((await deps.database.db.execute<{ n: string }>(sql`SELECT count(*) AS n FROM events WHERE relayed_at IS NULL`)).rows[0].n) === 0) break;
          await sleep(200);
        }
        rows.push({ measure: `${mode}: spawn → API /readyz 200 (worker /readyz 200)`, n: 1, 'p50 ms': stack.readyMs, 'p90 ms': '', 'p99 ms': '', 'max ms': stack.workerReadyMs });
        if (want('latency')) {
          await receiver.call('reset');
          // 8 channels, round-robin: one channel's posts are serial by design (docs/performance.md "One channel is serial").
          const user = await newUser(deps, stack, 8);
          const reg = await fetch(`${stack.webUrl}/accounts/${user.accountId}/webhooks`, {
            method: 'POST', headers: { authorization: `Bearer ${user.session}`, 'content-type': 'application/json' },
            body: JSON.stringify({ url: `${rxOrigin}/users-${randomBytes(3).toString('hex')}`, events: ['message.posted'], channels: 'all' }),
          });
          if (reg.status !== 201) throw new Error(`register endpoint: ${reg.status} ${await reg.text()}`);
          const headers = { authorization: `Bearer ${user.key}`, 'content-type': 'application/json' };
          const sums0 = await stageSums(stack.workerOps);
          const t0 = now();
          const run = await paced(RATE, 2 * PHASE_S, async (i): Promise<Sent | null> => {
            const channel = user.channels[i % user.channels.length];
            const sentAt = now();
            const res = await api.request({ method: 'POST', path: `/accounts/${user.accountId}/channels/${channel}/messages`, headers, body: JSON.stringify({ text: `status update ${i}: an ordinary line of chat` }) });
            const answeredAt = now();
            const body = (await res.body.json()) as { ts?: string };
            return res.statusCode === 201 && body.ts ? { key: `${channel}|${body.ts}`, sentAt, answeredAt } : null;
          });
          const sent = run.results.filter((p): p is Sent => p !== null);
          const deadline = Date.now() + 60_000;
          while ((await receiver.call<number>('count')) < sent.length && Date.now() < deadline) await sleep(100);
          const arrivals = new Map((await receiver.call<Arrival[]>('arrivals')).map((a) => [`${a.channel}|${a.ts}`, a]));
          const dup = (await receiver.call<Arrival[]>('arrivals')).length - arrivals.size;
          if (DUMP) await dumpPosts(deps, `${DUMP}.${mode}.tsv`, user.accountId, t0, sent, arrivals);
          for (const [phase, from, to] of [['first', 0, PHASE_S], ['second', PHASE_S, 2 * PHASE_S]] as const) {
            const inPhase = sent.filter((p) => p.sentAt >= t0 + from * 1000 && p.sentAt < t0 + to * 1000);
            const e2e: number[] = [];
            const api2xx: number[] = [];
            const after: number[] = [];
            const byE2e: Array<{ p: Sent; at: number; ms: number }> = [];
            for (const p of inPhase) {
              api2xx.push(p.answeredAt - p.sentAt);
              const a = arrivals.get(p.key);
              if (!a) continue;
              e2e.push(a.at - p.sentAt);
              after.push(a.at - p.answeredAt);
              byE2e.push({ p, at: a.at, ms: a.at - p.sentAt });
            }
            const missing = inPhase.length - e2e.length;
            const label = `${mode}, ${phase} ${PHASE_S} s after the endpoint was registered, ${RATE} posts/s`;
            notes.push(`${label}: the host's disk meanwhile (${COMMIT_PROBE}): ${commitProbeSummary(ctx.diskCommits, t0 + from * 1000, t0 + to * 1000)}`);
            rows.push(
              { measure: `${label}: send → receiver`, ...spread(e2e), missing, dup: phase === 'first' ? dup : '' },
              { measure: '  send → API 2xx', ...spread(api2xx) },
              { measure: '  API 2xx → receiver', ...spread(after) },
            );
            const s = [...e2e].sort((a, b) => a - b);
            const id = `users_${mode === 'compiled' ? 'compiled_' : ''}${phase === 'first' ? 'first' : 'later'}`;
            const rawP50 = r1(pct(rawLat, 50));
            const rawP99 = r1(pct(rawLat, 99));
            figures.push(
              { id: `${id}_p50_ms`, figure: `Send → receiver p50, ${label}`, value: r1(pct(s, 50)), unit: 'ms', baseline: `raw undici POST round trip p50 at ${RATE}/s`, baselineValue: rawP50,
                ...(phase === 'first' ? { target: '≤ 10 ms', met: pct(s, 50) <= 10 && missing === 0 } : {}) },
              { id: `${id}_p99_ms`, figure: `Send → receiver p99, ${label}`, value: r1(pct(s, 99)), unit: 'ms', baseline: `raw undici POST round trip p99 at ${RATE}/s`, baselineValue: rawP99,
                ...(phase === 'first' ? { target: '≤ 50 ms', met: pct(s, 99) <= 50 && missing === 0 } : {}) },
            );
            if (phase === 'first' && byE2e.length > 0) {
              byE2e.sort((a, b) => a.ms - b.ms);
              for (const [which, k] of [['p50', 50], ['p99', 99]] as const) {
                const one = byE2e[Math.max(0, Math.ceil((k / 100) * byE2e.length) - 1)];
                notes.push(`${mode}, the first phase's ${which} delivery, ms after the client sent its post: ${await stagesOf(deps, one.p, one.at)}`);
              }
            }
          }
          const sums1 = await stageSums(stack.workerOps);
          const means = [...sums1].map(([stage, v]) => {
            const b = sums0.get(stage) ?? { sum: 0, count: 0 };
            return `${stage} ${r1((1000 * (v.sum - b.sum)) / Math.max(1, v.count - b.count))}`;
          });
          notes.push(`${mode}, the worker's teamchat_webhook_stage_seconds over both phases, mean ms per stage: ${means.join(' · ')}`);
          if (run.errors || run.late) notes.push(`${mode}: ${run.errors} posts failed, ${run.late} not sent (over the outstanding bound)`);
        }
        if (mode === 'npm-start' && want('post8')) {
          const user = await newUser(deps, stack, 8);
          const echo = await startEcho();
          try {
            const body = JSON.stringify({ text: 'benchmark message with an ordinary line of chat', client_ref: 'bench' });
            const echoOpts: autocannon.Options = { url: `${echo.url}/echo`, method: 'POST', headers: { 'content-type': 'application/json' }, body, connections: CONNECTIONS };
            const postOpts: autocannon.Options = {
              url: stack.apiUrl, connections: CONNECTIONS,
              requests: user.channels.map((ch) => ({ method: 'POST' as const, path: `/accounts/${user.accountId}/channels/${ch}/messages`, headers: { authorization: `Bearer ${user.key}`, 'content-type': 'application/json' }, body })),
            };
            await autocannon({ ...echoOpts, duration: ECHO_WARMUP_S });
            const e = await autocannon({ ...echoOpts, duration: ECHO_S });
            await autocannon({ ...postOpts, duration: ECHO_WARMUP_S });
            const m = await autocannon({ ...postOpts, duration: ECHO_S });
            const ratio = r1((100 * m.requests.average) / e.requests.average);
            rows.push(
              { measure: 'bare Express JSON echo (POST), its own process', 'req/s': Math.round(e.requests.average), 'p50 ms': e.latency.p50, 'p99 ms': e.latency.p99, non2xx: e.non2xx + e.errors },
              { measure: `npm-start: POST messages over 8 channels, worker running (${ratio} % of the echo)`, 'req/s': Math.round(m.requests.average), 'p50 ms': m.latency.p50, 'p99 ms': m.latency.p99, non2xx: m.non2xx + m.errors },
            );
            figures.push(
              { id: 'users_post8_rps', figure: 'API write as npm start runs it: POST messages over 8 channels, worker running', value: Math.round(m.requests.average), unit: 'req/s', baseline: 'bare Express JSON echo (POST), own process', baselineValue: Math.round(e.requests.average), ratioPct: ratio, target: '≥ 25 % of baseline', met: ratio >= 25 && m.non2xx === 0 },
              { id: 'users_post8_p99_ms', figure: 'API write as npm start runs it: POST messages over 8 channels, p99', value: m.latency.p99, unit: 'ms', baseline: 'bare Express JSON echo (POST), own process', baselineValue: e.latency.p99, target: '≤ 40 ms', met: m.latency.p99 <= 40 },
            );
          } finally {
            echo.close();
          }
        }
      } finally {
        await api.close().catch(() => undefined);
        await stack.stop();
      }
    }
    return {
      title: 'As users see it: the service started as users start it, an endpoint registered from a web session, posts through the API (send → receiver)',
      rows,
      figures,
      notes: [
        `Each stack: its processes' logs (JSON, level info) go to a file; limits off (one account posts ${RATE}/s); NODE_ENV=development (the loopback receiver needs WEBHOOK_ALLOWED_HOSTS). Posts are sent open loop at ${RATE}/s for ${2 * PHASE_S} s right after the endpoint is registered, one delivery each; the first ${PHASE_S} s carry the target (p50 ≤ 10 ms, p99 ≤ 50 ms), the next ${PHASE_S} s are shown apart.`,
        'Stages of one event (its median and its p99 delivery of the first phase), from its rows and the receiver: the post\'s transaction (the event row\'s created_at), the API\'s answer at the client, the fan-out\'s write (relayed_at), the arrival, the attempt recorded (attempted_at); database and Node clocks are the same host\'s. The worker\'s stage histogram gives the mean of each stage: relay (commit → fan-out job starts), fan_out, dispatch (rows written → POST leaves), answer, record.',
        ...notes,
      ],
    };
  } finally {
    await raw.close().catch(() => undefined);
    await receiver.close();
    await deps.close();
  }
}
