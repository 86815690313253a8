/**
 * `npm run bench -- limits`: the cost of the fair-use checks (issue 4). The same read route,
 * GET /accounts/{id}, served by the real API app on loopback with limits on and with limits off
 * (config.limitsEnabled), measured with autocannon in one run. The plan limits are raised so
 * nothing is throttled: "on" pays for the per-minute limiter and the daily-unit charge (two Redis
 * round trips per call) but never refuses.
 *
 * The apps run in a child process so the load generator does not share their event loop.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import autocannon from 'autocannon';
import {
  createAccount, createApiKey, createDeps, getMemberByEmail, loadConfig, randomToken, waitReady,
  PLAN_LIMITS, type Plan, type PlanLimits, type Role,
} from '@teamchat/core';
import type { BenchContext, BenchResult } from './run';

const DURATION_S = Number(process.env.BENCH_DURATION ?? 8);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 16);
/** alternate off/on this many times, so drift (JIT, caches, a busy neighbour) hits both sides */
const ROUNDS = 2;

const high = (p: Plan): PlanLimits => ({ ...PLAN_LIMITS[p], callsPerMinute: 1_000_000_000, unitsPerDay: 1_000_000_000 });
const planLimits = { starter: high('starter'), pro: high('pro'), scale: high('scale') };

interface Ready { on: number; off: number; accountId: string; key: string }

/** The child: both configurations on loopback, each with its own deps as two API processes would be. */
async function serve(): Promise<void> {
  const common = {
    secretsKey: randomBytes(32).toString('hex'),
    redisPrefix: `bench-limits-${randomToken(6)}`,
    planLimits,
  };
  const env = { NODE_ENV: 'production', DATABASE_URL: process.env.BENCH_DATABASE_URL, REDIS_URL: process.env.BENCH_REDIS_URL, LOG_LEVEL: 'silent' };
  const { createApp } = await import('../apps/api/src/app');
  const ports: Record<string, number> = {};
  let seedDeps: ReturnType<typeof createDeps> | undefined;
  for (const mode of ['on', 'off'] as const) {
    const deps = createDeps(loadConfig(env, { ...common, limitsEnabled: mode === 'on' }), `bench-${mode}`);
    await waitReady(deps.redis);
    seedDeps ??= deps;
    const server = createApp(deps, 'api').listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    ports[mode] = (server.address() as { port: number }).port;
  }
  const db = seedDeps!.database.db;
  const email = `bench-${randomToken(6)}@example.test`;
  const acct = await db.transaction((tx) => createAccount(tx, { plan: 'pro', ownerEmail: email, ownerPassword: 'bench password 1' }));
  const member = await getMemberByEmail(db, acct.account_id, email);
  const { key } = await db.transaction((tx) => createApiKey(tx, {
    accountId: acct.account_id, userId: member!.userId, identityId: member!.identityId, role: member!.role as Role,
    scopes: ['account:manage'], readOnly: false,
  }));
  const ready: Ready = { on: ports.on, off: ports.off, accountId: acct.account_id, key };
  process.send!(ready);
}

function startChild(ctx: BenchContext): Promise<{ child: ChildProcess; ready: Ready }> {
  const child = fork(__filename, [], {
    execArgv: ['--import', 'tsx'],
    env: { ...process.env, LIMITS_BENCH_CHILD: '1', BENCH_DATABASE_URL: ctx.databaseUrl, BENCH_REDIS_URL: ctx.redisUrl },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  return new Promise((resolve, reject) => {
    child.once('message', (ready) => resolve({ child, ready: ready as Ready }));
    child.once('exit', (code) => reject(new Error(`bench server exited with ${code}`)));
  });
}

async function measure(url: string, key: string, duration: number) {
  const result = await autocannon({ url, connections: CONNECTIONS, duration, headers: { authorization: `Bearer ${key}` } });
  const ok = result['2xx'];
  const bad = result.non2xx + result.errors + result.timeouts;
  if (bad > 0 || ok === 0) throw new Error(`${url}: ${bad} non-2xx/errors of ${ok + bad}; the bench must not be throttled`);
  return { rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, ok };
}

export default async function bench(ctx: BenchContext): Promise<BenchResult> {
  const { child, ready } = await startChild(ctx);
  try {
    const url = (mode: 'on' | 'off') => `http://127.0.0.1:${ready[mode]}/accounts/${ready.accountId}`;
    // warm both (JIT, pools, Redis scripts)
    await measure(url('off'), ready.key, 2);
    await measure(url('on'), ready.key, 2);
    const runs: Record<'on' | 'off', Array<Awaited<ReturnType<typeof measure>>>> = { on: [], off: [] };
    for (let i = 0; i < ROUNDS; i += 1) {
      for (const mode of ['off', 'on'] as const) runs[mode].push(await measure(url(mode), ready.key, DURATION_S));
    }
    const avg = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    const row = (mode: 'on' | 'off') => ({
      limits: mode,
      'req/s': Math.round(avg(runs[mode].map((r) => r.rps))),
      'p50 ms': avg(runs[mode].map((r) => r.p50)).toFixed(1),
      'p99 ms': avg(runs[mode].map((r) => r.p99)).toFixed(1),
      requests: runs[mode].reduce((a, r) => a + r.ok, 0),
    });
    const on = row('on');
    const off = row('off');
    return {
      title: 'Fair-use limits: GET /accounts/{id}, limits on vs off',
      rows: [off, on, { limits: 'on/off', 'req/s': (on['req/s'] / off['req/s']).toFixed(3), 'p50 ms': '', 'p99 ms': '', requests: '' }],
      notes: [
        `autocannon, ${CONNECTIONS} connections, ${ROUNDS} alternating rounds of ${DURATION_S} s per mode after a 2 s warm-up each; apps in one child process on loopback`,
        '"on" = per-minute limiter (express-rate-limit + rate-limit-redis) and the daily-unit check-and-charge (Lua), limits raised so nothing is refused',
      ],
    };
  } finally {
    child.kill('SIGTERM');
  }
}

if (process.env.LIMITS_BENCH_CHILD === '1') {
  serve().catch((err: Error) => {
    process.stderr.write(`${err.stack}\n`);
    process.exit(1);
  });
}
