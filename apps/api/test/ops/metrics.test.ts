import fs from 'node:fs';
import path from 'node:path';
import request from 'supertest';
import { openAccount, createDeps, loadConfig, randomToken, API_READINESS, startOpsServer, type OpsServer } from '@teamchat/core';
import { webhookQueuesFor } from '@teamchat/delivery';
import { bearer, newAccount, newKey, startHarness, UNLIMITED_PLANS, PASSWORD, type Harness } from '../../../../test/support/harness';
import { TEST_REDIS_URL } from '../../../../test/support/env';
import { createMigratedDatabase, dropDatabase } from '../../../../test/support/databases';
import { declaredNames, parseMetrics, valueOf } from '../../../../test/support/prometheus';
import { ROOT } from '../../../../test/support/processes';

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

async function scrape(port = ops.port) {
  const res = await fetch(`http://127.0.0.1:${port}/metrics`);
  expect(res.status).toBe(200);
  const text = await res.text();
  return { text, samples: parseMetrics(text) };
}

/** The metric names an operator alerts on (docs/operations.md, "What to alert on"). */
export const OPERATOR_METRICS = [
  'teamchat_http_requests_total',
  'teamchat_http_request_duration_seconds',
  'teamchat_outbox_backlog_events',
  'teamchat_outbox_oldest_age_seconds',
  'teamchat_queue_jobs',
  'teamchat_webhook_deliveries_total',
  'teamchat_webhook_attempt_duration_seconds',
  'teamchat_webhook_end_to_end_seconds',
  'teamchat_webhook_endpoints_disabled_total',
  'teamchat_webhook_dispatcher_rows',
  'teamchat_limit_refusals_total',
  'teamchat_limit_degraded_decisions_total',
  'teamchat_metrics_collect_errors_total',
  'process_cpu_seconds_total',
  'process_resident_memory_bytes',
  'nodejs_eventloop_lag_p99_seconds',
];

describe('Prometheus metrics on the operations port', () => {
  test('every metric an operator alerts on exists, and each teamchat_ metric is documented in docs/operations.md', async () => {
    const { text } = await scrape();
    const names = declaredNames(text);
    for (const name of OPERATOR_METRICS) expect(names).toContain(name);
    const doc = fs.readFileSync(path.join(ROOT, 'docs/operations.md'), 'utf8');
    for (const name of [...names].filter((n) => n.startsWith('teamchat_'))) expect(doc).toContain(`\`${name}\``);
  });

  test('HTTP requests move the counter and the histogram, labelled by route template (never an id) and status', async () => {
    const a = await newAccount(h);
    const key = await newKey(h, a.accountId, a.owner.email, ['account:manage']);
    const labels = { host: 'api', method: 'GET', route: '/accounts/:accountId', status: '200' };
    const before = await scrape();
    for (let i = 0; i < 3; i++) expect((await request(h.api).get(`/accounts/${a.accountId}`).set(bearer(key))).status).toBe(200);
    const after = await scrape();
    expect(valueOf(after.samples, 'teamchat_http_requests_total', labels) - valueOf(before.samples, 'teamchat_http_requests_total', labels)).toBe(3);
    expect(valueOf(after.samples, 'teamchat_http_request_duration_seconds_count', labels)
      - valueOf(before.samples, 'teamchat_http_request_duration_seconds_count', labels)).toBe(3);
    expect(after.text).not.toContain(a.accountId);
  });

  test('a nested route and an error answer carry the nested template; unknown paths are "unmatched"', async () => {
    const a = await newAccount(h);
    const key = await newKey(h, a.accountId, a.owner.email, ['channels:read']);
    expect((await request(h.api).get(`/accounts/${a.accountId}/channels/C_NOPE_${randomToken(6)}`).set(bearer(key))).status).toBeGreaterThanOrEqual(400);
    expect((await request(h.api).get(`/no/such/${randomToken(10)}`).set(bearer(key))).status).toBe(404);
    expect((await request(h.web).get('/healthz')).status).toBe(200);
    const { samples, text } = await scrape();
    const routes = new Set(samples.filter((s) => s.name === 'teamchat_http_requests_total').map((s) => s.labels.route));
    expect(routes).toContain('/accounts/:accountId/channels/:channelId');
    expect(routes).toContain('unmatched');
    expect(valueOf(samples, 'teamchat_http_requests_total', { host: 'web', route: '/healthz', status: '200' })).toBeGreaterThanOrEqual(1);
    expect(text).not.toContain(a.accountId);
    expect(text).not.toContain('/no/such');
  });

  test('429 refusals are counted by code and scope (rate_limited, seat_per_minute)', async () => {
    const limited = await startHarness({ planLimits: { ...UNLIMITED_PLANS, pro: { ...UNLIMITED_PLANS.pro, callsPerMinute: 1 } } });
    const limitedOps = await startOpsServer(limited.deps, 0, API_READINESS, '127.0.0.1');
    try {
      const a = await newAccount(limited);
      const key = await newKey(limited, a.accountId, a.owner.email, ['account:manage']);
      const labels = { code: 'rate_limited', scope: 'seat_per_minute' };
      const before = valueOf((await scrape(limitedOps.port)).samples, 'teamchat_limit_refusals_total', labels);
      expect((await request(limited.api).get(`/accounts/${a.accountId}`).set(bearer(key))).status).toBe(200);
      expect((await request(limited.api).get(`/accounts/${a.accountId}`).set(bearer(key))).status).toBe(429);
      expect((await request(limited.api).get(`/accounts/${a.accountId}`).set(bearer(key))).status).toBe(429);
      const after = valueOf((await scrape(limitedOps.port)).samples, 'teamchat_limit_refusals_total', labels);
      expect(after - before).toBe(2);
    } finally {
      await limitedOps.close();
      await limited.close();
    }
  });

  test('queue depths per queue and state are read at scrape time', async () => {
    // No worker consumes this harness's prefix: the jobs stay where they are put.
    await h.deps.jobQueue.queue.add('run', { jobId: `job_${randomToken(8)}` }, { delay: 3_600_000 });
    await h.deps.jobQueue.queue.add('run', { jobId: `job_${randomToken(8)}` });
    await h.deps.jobQueue.queue.add('run', { jobId: `job_${randomToken(8)}` });
    const { samples } = await scrape();
    expect(valueOf(samples, 'teamchat_queue_jobs', { queue: 'jobs', state: 'delayed' })).toBe(1);
    expect(valueOf(samples, 'teamchat_queue_jobs', { queue: 'jobs', state: 'waiting' })).toBe(2);
    expect(valueOf(samples, 'teamchat_queue_jobs', { queue: 'jobs', state: 'active' })).toBe(0);
    expect(valueOf(samples, 'teamchat_queue_jobs', { queue: 'jobs', state: 'failed' })).toBe(0);
  });

  test('the webhook fan-out and delivery queues report their depths once the process uses them (operators scale workers on queue depth)', async () => {
    const queues = webhookQueuesFor(h.deps);
    await queues.delivery.add('deliver', { deliveryId: `dlv_${randomToken(8)}` }, { delay: 3_600_000 });
    const { samples } = await scrape();
    expect(valueOf(samples, 'teamchat_queue_jobs', { queue: 'webhook-delivery', state: 'delayed' })).toBe(1);
    expect(valueOf(samples, 'teamchat_queue_jobs', { queue: 'webhook-fanout', state: 'waiting' })).toBe(0);
  });

  test('outbox backlog (unrelayed rows) and the oldest row age are read at scrape time', async () => {
    // A database of its own, so no relay of another test file touches its rows.
    const { name, url } = await createMigratedDatabase('teamchat_ops');
    const config = loadConfig(
      { NODE_ENV: 'test', DATABASE_URL: url, REDIS_URL: TEST_REDIS_URL, LOG_LEVEL: 'silent' },
      { secretsKey: 'ab'.repeat(32), redisPrefix: `test-${randomToken(8)}` },
    );
    const deps = createDeps(config, 'test', { poolSize: 2 });
    const own = await startOpsServer(deps, 0, API_READINESS, '127.0.0.1');
    try {
      let { samples } = await scrape(own.port);
      expect(valueOf(samples, 'teamchat_outbox_backlog_events')).toBe(0);
      expect(valueOf(samples, 'teamchat_outbox_oldest_age_seconds')).toBe(0);

      const acct = await openAccount(deps.database.db, { plan: 'pro', ownerEmail: `o-${randomToken(6)}@example.test`, ownerPassword: PASSWORD });
      const { pool } = deps.database;
      await pool.query(`UPDATE events SET relayed_at = now()`); // account creation may raise events of its own
      await pool.query(
        `INSERT INTO events (id, account_id, type, data, created_at) VALUES
           ('evt_ops_old_${randomToken(6)}', $1, 'message.created', '{}', now() - interval '90 seconds'),
           ('evt_ops_new_${randomToken(6)}', $1, 'message.created', '{}', now())`,
        [acct.account_id],
      );
      ({ samples } = await scrape(own.port));
      expect(valueOf(samples, 'teamchat_outbox_backlog_events')).toBe(2);
      const age = valueOf(samples, 'teamchat_outbox_oldest_age_seconds');
      expect(age).toBeGreaterThanOrEqual(89);
      expect(age).toBeLessThan(600);

      await pool.query(`UPDATE events SET relayed_at = now()`);
      ({ samples } = await scrape(own.port));
      expect(valueOf(samples, 'teamchat_outbox_backlog_events')).toBe(0);
    } finally {
      await own.close();
      await deps.close();
      await dropDatabase(name);
    }
  });

  test('the delivery metrics are defined for the webhook code, with their label names', async () => {
    const m = h.deps.metrics;
    m.deliveriesTotal.inc({ outcome: 'delivered' });
    m.attemptDurationSeconds.observe({ outcome: 'delivered' }, 0.12);
    m.endToEndSeconds.observe(0.5);
    m.endpointsDisabledTotal.inc({ reason: 'gone' });
    const { samples } = await scrape();
    expect(valueOf(samples, 'teamchat_webhook_deliveries_total', { outcome: 'delivered' })).toBeGreaterThanOrEqual(1);
    expect(valueOf(samples, 'teamchat_webhook_attempt_duration_seconds_bucket', { outcome: 'delivered', le: '0.25' })).toBeGreaterThanOrEqual(1);
    expect(valueOf(samples, 'teamchat_webhook_end_to_end_seconds_bucket', { le: '0.5' })).toBeGreaterThanOrEqual(1);
    expect(valueOf(samples, 'teamchat_webhook_endpoints_disabled_total', { reason: 'gone' })).toBeGreaterThanOrEqual(1);
    // Degraded decisions are read from the limits module's totals at scrape time (apps/api/test/limits/redis-away.test.ts makes them move).
    expect(valueOf(samples, 'teamchat_limit_degraded_decisions_total', { limit: 'seat_per_minute', decision: 'local_count' })).toBeDefined();
  });
});
