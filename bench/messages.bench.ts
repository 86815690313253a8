/**
 * `npm run bench -- messages`: throughput and latency of POST /accounts/{id}/channels/{id}/messages
 * on the real API app (loopback, real PostgreSQL and Redis, limits off), next to a bare Express
 * JSON-echo route measured the same way in the same run.
 *
 * The servers run in this process; autocannon fires from a worker thread so the load generator
 * does not share the servers' event loop.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import autocannon from 'autocannon';
import express from 'express';
import { createApp } from '../apps/api/src/app';
import { createAccount, createApiKey, createDeps, getMemberByEmail, loadConfig, randomToken, waitReady, type Role } from '@teamchat/core';
import type { BenchContext, BenchResult } from './run';

/** Concurrent connections; seconds per measurement (after a warm-up of WARMUP_S). */
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const DURATION_S = Number(process.env.BENCH_DURATION ?? 10);
const WARMUP_S = 2;
const SPREAD_CHANNELS = 8;

function listen(app: express.Express): Promise<{ server: http.Server; url: string }> {
  return new Promise((resolve) => {
    const server = app.listen(0, '127.0.0.1', () => {
      resolve({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` });
    });
  });
}

type Opts = autocannon.Options;

async function measure(opts: Opts) {
  await autocannon({ ...opts, duration: WARMUP_S, workers: 1 });
  const r = await autocannon({ ...opts, duration: DURATION_S, workers: 1 });
  const ok = Object.entries(r.statusCodeStats ?? {}).filter(([s]) => Number(s) < 300).reduce((n, [, v]) => n + Number(v.count), 0);
  return {
    rps: r.requests.average,
    p50: r.latency.p50,
    p99: r.latency.p99,
    ok,
    non2xx: r.non2xx,
    errors: r.errors + r.timeouts,
  };
}

export default async function messagesBench(ctx: BenchContext): Promise<BenchResult> {
  const config = loadConfig(
    { NODE_ENV: 'production', DATABASE_URL: ctx.databaseUrl, REDIS_URL: ctx.redisUrl, LOG_LEVEL: 'silent' },
    { secretsKey: 'cd'.repeat(32), redisPrefix: `bench-${randomToken(8)}`, limitsEnabled: false },
  );
  const deps = createDeps(config, 'bench', { poolSize: 20 });
  await waitReady(deps.redis);
  const api = await listen(createApp(deps, 'api'));
  const echoApp = express();
  echoApp.use(express.json());
  echoApp.post('/echo', (req, res) => { res.json(req.body); });
  const echo = await listen(echoApp);

  try {
    const email = `bench-${randomToken(6)}@example.test`;
    const acct = await deps.database.db.transaction((tx) => createAccount(tx, { plan: 'scale', ownerEmail: email, ownerPassword: 'bench password 1' }));
    const member = await getMemberByEmail(deps.database.db, acct.account_id, email);
    const { key } = await deps.database.db.transaction((tx) => createApiKey(tx, {
      accountId: acct.account_id, userId: member!.userId, identityId: member!.identityId, role: member!.role as Role, scopes: [], readOnly: false,
    }));
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    const channels: string[] = [];
    for (let i = 0; i < SPREAD_CHANNELS; i++) {
      const res = await fetch(`${api.url}/accounts/${acct.account_id}/channels`, { method: 'POST', headers, body: JSON.stringify({ name: `bench-${i}` }) });
      if (res.status !== 201) throw new Error(`create channel: ${res.status} ${await res.text()}`);
      channels.push(((await res.json()) as { id: string }).id);
    }
    const body = JSON.stringify({ text: `benchmark message <@${member!.identityId}> with a mention`, client_ref: 'bench' });
    const path = (ch: string) => `/accounts/${acct.account_id}/channels/${ch}/messages`;

    const bare = await measure({ url: `${echo.url}/echo`, method: 'POST', headers: { 'content-type': 'application/json' }, body, connections: CONNECTIONS });
    const one = await measure({ url: api.url, method: 'POST', headers, body, connections: CONNECTIONS, requests: [{ method: 'POST', path: path(channels[0]), headers, body }] });
    const spread = await measure({
      url: api.url, method: 'POST', headers, body, connections: CONNECTIONS,
      requests: channels.map((ch) => ({ method: 'POST' as const, path: path(ch), headers, body })),
    });

    const row = (name: string, m: Awaited<ReturnType<typeof measure>>) => ({
      route: name,
      'req/s': Math.round(m.rps),
      'p50 ms': m.p50,
      'p99 ms': m.p99,
      '2xx': m.ok,
      'non-2xx': m.non2xx,
      errors: m.errors,
      'x slower than echo': Number((bare.rps / m.rps).toFixed(1)),
    });
    return {
      title: `POST messages vs bare Express JSON echo (${CONNECTIONS} connections, ${DURATION_S}s each after ${WARMUP_S}s warm-up)`,
      rows: [row('bare express echo', bare), row('POST messages, 1 channel', one), row(`POST messages, ${SPREAD_CHANNELS} channels`, spread)],
      notes: [
        'Each post: key lookup, account + membership, then one transaction (ts under the channel row lock, message row, mention lookup, 2 event rows).',
        'On one channel every post waits for the previous commit (the ts lock), so that row shows the per-channel ceiling.',
        'Limits are off (limitsEnabled=false); logging is silent; the API, PostgreSQL, Redis and autocannon share this machine.',
      ],
    };
  } finally {
    await new Promise((r) => api.server.close(r));
    await new Promise((r) => echo.server.close(r));
    await deps.close();
  }
}
