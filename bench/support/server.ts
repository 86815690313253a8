/**
 * The bench's server process (forked by bench/support/child.ts). It serves, on loopback:
 * - the real API host app twice: limits off and limits on (plan limits raised so nothing is refused),
 *   each with its own deps (pool, Redis connection), as two API processes would;
 * - a bare Express app: `POST /echo` (JSON echo) and `GET /page` (a fixed JSON body, set to a real
 *   messages page after seeding), the baselines every route is compared with.
 * Logging is as a deployment runs by default: LOG_LEVEL info, JSON lines to stdout (the parent
 * sends this process's stdout to /dev/null).
 *
 * Over IPC it reports, per measured interval: this process's CPU time (process.cpuUsage), the
 * PostgreSQL queries sent (each `Client.query` is one round trip) and the Redis commands sent.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import express from 'express';
import type { SeedResult, ServerReady, StatsSnapshot, ToServer } from './protocol';

import { counters, queryTexts } from './round-trip-counters';

function listen(app: express.Express): Promise<number> {
  return new Promise((resolve) => {
    const server: http.Server = app.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port));
    server.keepAliveTimeout = 60_000;
  });
}

async function main(): Promise<void> {
  const core = await import('@teamchat/core');
  const { createApp } = await import('../../apps/api/src/app');
  const high = (p: 'starter' | 'pro' | 'scale') => ({ ...core.PLAN_LIMITS[p], callsPerMinute: 1_000_000_000, unitsPerDay: 1_000_000_000 });
  const env = {
    // not 'production': config refuses limits off there (benchmarks only); nodeEnv changes nothing else at run time
    NODE_ENV: 'development',
    DATABASE_URL: process.env.BENCH_DATABASE_URL,
    REDIS_URL: process.env.BENCH_REDIS_URL,
    LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'info',
  };
  const common = {
    secretsKey: randomBytes(32).toString('hex'),
    redisPrefix: `bench-${core.randomToken(6)}`,
    planLimits: { starter: high('starter'), pro: high('pro'), scale: high('scale') },
  };
  const depsOff = core.createDeps(core.loadConfig(env, { ...common, limitsEnabled: false }), 'api', { poolSize: 20 });
  const depsOn = core.createDeps(core.loadConfig(env, { ...common, limitsEnabled: true }), 'api', { poolSize: 20 });
  await core.waitReady(depsOff.redis);
  await core.waitReady(depsOn.redis);

  let page: unknown = { data: [], next_cursor: null };
  const bare = express();
  bare.use(express.json());
  bare.post('/echo', (req, res) => { res.json(req.body); });
  bare.get('/page', (_req, res) => { res.json(page); });

  const ports = {
    off: await listen(createApp(depsOff, 'api')),
    on: await listen(createApp(depsOn, 'api')),
    bare: await listen(bare),
  };

  let mark = { cpu: process.cpuUsage(), at: process.hrtime.bigint(), pg: 0, redis: 0 };
  const handlers: Record<ToServer['cmd'], (msg: ToServer) => Promise<unknown> | unknown> = {
    seed: async () => seed(depsOff, ports.off),
    setPage: (msg) => { page = (msg as Extract<ToServer, { cmd: 'setPage' }>).page; },
    start: () => {
      queryTexts?.clear();
      mark = { cpu: process.cpuUsage(), at: process.hrtime.bigint(), pg: counters.pg, redis: counters.redis };
    },
    stop: (): StatsSnapshot => {
      const cpu = process.cpuUsage(mark.cpu);
      return {
        cpuUs: cpu.user + cpu.system,
        systemUs: cpu.system,
        wallMs: Number(process.hrtime.bigint() - mark.at) / 1e6,
        pgQueries: counters.pg - mark.pg,
        redisCommands: counters.redis - mark.redis,
        ...(queryTexts ? { queries: Object.fromEntries([...queryTexts].sort((a, b) => b[1] - a[1])) } : {}),
      };
    },
    exit: async () => {
      await depsOff.close();
      await depsOn.close();
      // process.exit lets --cpu-prof write its profile.
      setImmediate(() => process.exit(0));
    },
  };
  process.on('message', (msg: ToServer & { id: number }) => {
    Promise.resolve()
      .then(() => handlers[msg.cmd](msg))
      .then(
        (value) => process.send!({ id: msg.id, ok: true, value }),
        (err: Error) => process.send!({ id: msg.id, ok: false, error: err.stack }),
      );
  });
  const ready: ServerReady = { ports };
  process.send!({ id: 0, ok: true, value: ready });

  async function seed(deps: typeof depsOff, port: number): Promise<SeedResult> {
    const db = deps.database.db;
    const email = `bench-${core.randomToken(6)}@example.test`;
    const acct = await core.openAccount(db, { plan: 'scale', ownerEmail: email, ownerPassword: 'bench password 1' });
    const member = await core.getMemberByEmail(db, acct.account_id, email);
    const { key } = await db.transaction((tx) => core.createApiKey(tx, {
      accountId: acct.account_id, userId: member!.userId, identityId: member!.identityId, role: member!.role as 'owner',
      scopes: ['account:manage'], readOnly: false,
    }));
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    const base = `http://127.0.0.1:${port}/accounts/${acct.account_id}`;
    const call = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(`${base}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
      if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
      return res.json() as Promise<any>;
    };
    const channels: string[] = [];
    for (let i = 0; i < 9; i += 1) channels.push((await call('POST', '/channels', { name: `bench-${i}` })).id);
    // The read channel: 60 messages (a page is 50), some with a mention and a reaction.
    const readChannel = channels.pop()!;
    for (let i = 0; i < 60; i += 1) {
      const text = i % 5 === 0 ? `status update ${i} for <@${member!.identityId}>: all green` : `message ${i} in the read channel, an ordinary line of chat`;
      const m = await call('POST', `/channels/${readChannel}/messages`, { text });
      if (i % 7 === 0) await call('PUT', `/channels/${readChannel}/messages/${m.ts}/reactions/thumbsup`);
    }
    return { accountId: acct.account_id, identityId: member!.identityId, key, channels, readChannel };
  }
}

main().catch((err: Error) => {
  process.stderr.write(`bench server failed: ${err.stack}\n`);
  process.exit(1);
});
