import request from 'supertest';
import { API_READINESS, WORKER_READINESS, createMetrics, createRedis, startOpsServer, type OpsServer } from '@teamchat/core';
import { createDatabase } from '@teamchat/db';
import { createApp } from '../../src/app';
import { bearer, newAccount, newKey, startHarness, type Harness } from '../../../../test/support/harness';
import { closedPort } from '../../../../test/support/processes';

let h: Harness;
let ops: OpsServer;
beforeAll(async () => {
  h = await startHarness();
  ops = await startOpsServer(h.deps, 0, API_READINESS, '127.0.0.1');
});
afterAll(async () => {
  await ops.close();
  await h.close();
});

/** A Redis client on a closed port of this machine: nothing answers, and it never retries. */
async function deadRedis() {
  const redis = createRedis(`redis://127.0.0.1:${await closedPort()}`, 'producer', { retryStrategy: () => null, connectTimeout: 500 });
  return redis;
}

/** The harness's deps with PostgreSQL or Redis replaced by one that does not answer. */
async function brokenDeps(part: 'postgres' | 'redis') {
  if (part === 'redis') {
    const redis = await deadRedis();
    return { deps: { ...h.deps, redis }, close: async () => redis.disconnect() };
  }
  const database = createDatabase(`postgres://postgres@127.0.0.1:${await closedPort()}/nothing`);
  return { deps: { ...h.deps, database }, close: () => database.close() };
}

describe('load-balancer probes: /healthz and /readyz on the API and web hosts', () => {
  test.each(['api', 'web'] as const)('%s host: /healthz answers 200 without a credential, with X-Request-Id', async (host) => {
    const res = await request(h[host]).get('/healthz');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'ok', host });
    expect(res.headers['x-request-id']).toMatch(/^req_/);
  });

  test.each(['api', 'web'] as const)('%s host: /readyz answers 200 when PostgreSQL and Redis answer', async (host) => {
    const res = await request(h[host]).get('/readyz');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'ready', checks: { postgres: 'ok', redis: 'ok', warm: 'ok' }, host });
    expect(res.headers['x-request-id']).toBeDefined();
  });

  test('/readyz answers 200 degraded, naming redis, when Redis is unreachable (PostgreSQL still ok): the API serves without it', async () => {
    const { deps, close } = await brokenDeps('redis');
    try {
      for (const host of ['api', 'web'] as const) {
        const res = await request(createApp(deps, host)).get('/readyz');
        expect(res.status).toBe(200);
        expect(res.body).toEqual({ status: 'degraded', checks: { postgres: 'ok', redis: 'failed', warm: 'ok' }, host });
        expect(res.headers['x-request-id']).toBeDefined();
      }
      expect((await request(createApp(deps, 'api')).get('/healthz')).status).toBe(200);
    } finally {
      await close();
    }
  });

  test('/readyz answers 503 naming postgres when PostgreSQL is unreachable', async () => {
    const { deps, close } = await brokenDeps('postgres');
    try {
      const res = await request(createApp(deps, 'api')).get('/readyz');
      expect(res.status).toBe(503);
      expect(res.body.checks).toEqual({ postgres: 'failed', redis: 'ok', warm: 'ok' });
      // Unauthenticated endpoint: no host names or driver messages in the body.
      expect(JSON.stringify(res.body)).not.toMatch(/127\.0\.0\.1|ECONNREFUSED/);
    } finally {
      await close();
    }
  });

  test.each(['api', 'web'] as const)('%s host: /metrics is not served on a public port (404)', async (host) => {
    const res = await request(h[host]).get('/metrics');
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe('not_found');
    expect(res.text).not.toContain('teamchat_http_requests_total');
  });

  test('/metrics is 404 on the API host with a valid credential too', async () => {
    const a = await newAccount(h);
    const key = await newKey(h, a.accountId, a.owner.email, ['account:manage']);
    const res = await request(h.api).get('/metrics').set(bearer(key));
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe('not_found');
  });
});

describe('docs/operations.md "Processes and ports": the operations server (OPS_PORT / WORKER_OPS_PORT)', () => {
  const url = (p: string) => `http://127.0.0.1:${ops.port}${p}`;

  test('serves /healthz, /readyz and /metrics', async () => {
    const health = await fetch(url('/healthz'));
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: 'ok' });

    const ready = await fetch(url('/readyz'));
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: 'ready', checks: { postgres: 'ok', redis: 'ok', warm: 'ok' } });

    const metrics = await fetch(url('/metrics'));
    expect(metrics.status).toBe(200);
    expect(metrics.headers.get('content-type')).toContain('text/plain');
    const text = await metrics.text();
    expect(text).toContain('# TYPE teamchat_http_requests_total counter');
    expect(text).toContain('process_cpu_user_seconds_total');
  });

  test('unknown paths are 404 and only GET/HEAD are served', async () => {
    expect((await fetch(url('/accounts'))).status).toBe(404);
    expect((await fetch(url('/metrics'), { method: 'POST' })).status).toBe(405);
  });

  test('/readyz on the operations port: 200 degraded for the API, 503 for the worker (its queues live in Redis) when Redis is unreachable', async () => {
    const { deps, close } = await brokenDeps('redis');
    const api = await startOpsServer(deps, 0, API_READINESS, '127.0.0.1');
    const worker = await startOpsServer(deps, 0, WORKER_READINESS, '127.0.0.1');
    try {
      const a = await fetch(`http://127.0.0.1:${api.port}/readyz`);
      expect(a.status).toBe(200);
      expect(await a.json()).toEqual({ status: 'degraded', checks: { postgres: 'ok', redis: 'failed', warm: 'ok' } });
      const w = await fetch(`http://127.0.0.1:${worker.port}/readyz`);
      expect(w.status).toBe(503);
      expect(await w.json()).toEqual({ status: 'unavailable', checks: { postgres: 'ok', redis: 'failed', warm: 'ok' } });
    } finally {
      await api.close();
      await worker.close();
      await close();
    }
  });

  test('while PostgreSQL is unreachable, /readyz is 503 and a scrape still answers (outbox gauges NaN, failure counted)', async () => {
    const { deps, close } = await brokenDeps('postgres');
    const metrics = createMetrics();
    metrics.watchOutbox(deps.database.pool);
    const broken = await startOpsServer({ ...deps, metrics }, 0, API_READINESS, '127.0.0.1');
    try {
      const res = await fetch(`http://127.0.0.1:${broken.port}/readyz`);
      expect(res.status).toBe(503);
      expect(await res.json()).toEqual({ status: 'unavailable', checks: { postgres: 'failed', redis: 'ok', warm: 'ok' } });
      const text = await (await fetch(`http://127.0.0.1:${broken.port}/metrics`)).text();
      expect(text).toMatch(/^teamchat_outbox_backlog_events NaN$/im);
      expect(text).toMatch(/^teamchat_outbox_oldest_age_seconds NaN$/im);
      // Collectors run concurrently, so a failure is counted by the time of the next scrape.
      const again = await (await fetch(`http://127.0.0.1:${broken.port}/metrics`)).text();
      expect(again).toMatch(/teamchat_metrics_collect_errors_total\{collector="outbox"\} [1-9]/);
    } finally {
      await broken.close();
      await close();
    }
  });
});
