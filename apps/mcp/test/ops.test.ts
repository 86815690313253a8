/**
 * The MCP server's operations port (docs/operations.md "Processes and ports", "Readiness",
 * "Graceful shutdown"): /healthz, /readyz and /metrics on MCP_OPS_PORT. Real MCP processes, run
 * as `npm start` runs them (tsx in the process), on ephemeral ports, on the test database; the
 * Redis-away test runs its process on a redis-server of its own that it kills and starts again.
 */
import http from 'node:http';
import { newAccount, newKey, startHarness, type Harness } from '../../../test/support/harness';
import { serviceEnv, startService, type Service } from '../../../test/support/processes';
import { parseMetrics, type Sample } from '../../../test/support/prometheus';
import { testRedisServer, type TestRedisServer } from '../../../test/support/redis-server';

jest.setTimeout(120_000);

let h: Harness;
let redis: TestRedisServer;
const running: Service[] = [];
beforeAll(async () => {
  h = await startHarness();
  redis = await testRedisServer();
});
afterAll(async () => {
  await h?.close();
  await redis?.stop();
});
// SIGTERM, then SIGKILL if a test left one hanging: no process outlives its test.
afterEach(async () => {
  for (const s of running.splice(0)) {
    if (s.child.exitCode === null && s.child.signalCode === null) s.child.kill('SIGTERM');
    const timer = setTimeout(() => s.child.kill('SIGKILL'), 30_000);
    await s.exited;
    clearTimeout(timer);
  }
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** An MCP process on ephemeral ports; resolves once it logs `listening` (its ports). */
async function startMcp(env: Record<string, string> = {}): Promise<{ svc: Service; mcpPort: number; opsPort: number }> {
  const svc = startService('apps/mcp/src/server.ts', serviceEnv({
    DATABASE_URL: h.deps.config.databaseUrl, SECRETS_KEY: h.deps.config.secretsKey, MCP_PORT: '0', MCP_OPS_PORT: '0', ...env,
  }));
  running.push(svc);
  const line = await svc.waitFor((l) => l.message === 'listening', 40_000);
  return { svc, mcpPort: line.mcp_port as number, opsPort: line.ops_port as number };
}

async function readyz(port: number): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`http://127.0.0.1:${port}/readyz`);
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** Polls /readyz until `done` holds (at most `timeoutMs`); answers the last reading. */
async function readyzUntil(port: number, done: (r: Awaited<ReturnType<typeof readyz>>) => boolean, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  let r = await readyz(port);
  while (!done(r) && Date.now() < deadline) {
    await sleep(100);
    r = await readyz(port);
  }
  return r;
}

async function scrape(port: number): Promise<{ text: string; type: string | null; samples: Sample[] }> {
  const res = await fetch(`http://127.0.0.1:${port}/metrics`);
  expect(res.status).toBe(200);
  const text = await res.text();
  return { text, type: res.headers.get('content-type'), samples: parseMetrics(text) };
}

/** The MCP session cap's Redis-away decisions as exported (undefined when the sample is missing). */
const MCP_SESSIONS_LOCAL = { limit: 'mcp_sessions_per_seat', decision: 'local_count' };
const sessionCapLocal = (samples: Sample[]) => samples.find((s) => s.name === 'teamchat_limit_degraded_decisions_total'
  && s.labels.limit === MCP_SESSIONS_LOCAL.limit && s.labels.decision === MCP_SESSIONS_LOCAL.decision)?.value;

/** An MCP initialize, as a client sends it first (a new session). */
function initialize(mcpPort: number, key: string): Promise<Response> {
  return fetch(`http://127.0.0.1:${mcpPort}/mcp`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'ops-test', version: '1' } } }),
    signal: AbortSignal.timeout(10_000),
  });
}

/** The shutdown steps a process logged, in order. */
const shutdownSteps = (svc: Service) => svc.lines.filter((l) => l.message === 'shutdown step done').map((l) => l.step);

test('the operations port answers /healthz, /readyz 200 ready once warm, and /metrics in Prometheus text with the process metrics', async () => {
  const { svc, mcpPort, opsPort } = await startMcp();
  expect(opsPort).toBeGreaterThan(0);
  expect(opsPort).not.toBe(mcpPort);

  const health = await fetch(`http://127.0.0.1:${opsPort}/healthz`);
  expect(health.status).toBe(200);
  expect(await health.json()).toEqual({ status: 'ok' });

  const ready = await readyzUntil(opsPort, (r) => r.status === 200);
  expect(ready).toEqual({ status: 200, body: { status: 'ready', checks: { postgres: 'ok', redis: 'ok', warm: 'ok' } } });
  // Ready only once its warm-up ran: the pool with its statements, then the requests through its server.
  expect(svc.lines.find((l) => l.message === 'warm')).toMatchObject({ steps_ms: { postgres: expect.any(Number), requests: expect.any(Number) } });

  const { text, type, samples } = await scrape(opsPort);
  expect(type).toContain('text/plain');
  expect(text).toContain('# TYPE process_cpu_user_seconds_total counter');
  expect(text).toContain('# TYPE nodejs_eventloop_lag_p99_seconds gauge');
  expect(text).toContain('# TYPE teamchat_limit_degraded_decisions_total counter');
  // Exported from the start (0 while Redis answers), so an alert's rate() has a series to read.
  expect(sessionCapLocal(samples)).toBe(0);

  // Not served on the public port, and the operations port serves nothing else.
  expect((await fetch(`http://127.0.0.1:${mcpPort}/metrics`)).status).toBe(404);
  expect((await fetch(`http://127.0.0.1:${opsPort}/mcp`)).status).toBe(404);
  expect((await fetch(`http://127.0.0.1:${opsPort}/metrics`, { method: 'POST' })).status).toBe(405);
});

test('while Redis is away: /readyz answers 200 degraded naming redis, the session cap decided in the process is counted in /metrics, and ready again once Redis answers', async () => {
  await redis.start();
  const acct = await newAccount(h, 'pro');
  const key = await newKey(h, acct.accountId, acct.owner.email, []);
  const { svc, mcpPort, opsPort } = await startMcp({ REDIS_URL: redis.url });
  expect((await readyzUntil(opsPort, (r) => r.status === 200)).body).toMatchObject({ status: 'ready' });
  const before = sessionCapLocal((await scrape(opsPort)).samples);
  expect(before).toBe(0);

  await redis.stop();
  const degraded = await readyzUntil(opsPort, (r) => (r.body.checks as { redis?: string }).redis === 'failed', 15_000);
  // Not 503: every MCP replica would leave its load balancer during a Redis outage.
  expect(degraded).toEqual({ status: 200, body: { status: 'degraded', checks: { postgres: 'ok', redis: 'failed', warm: 'ok' } } });

  const opened = await initialize(mcpPort, key);
  expect(opened.status).toBe(200);
  expect(opened.headers.get('mcp-session-id')).toEqual(expect.any(String));
  expect(sessionCapLocal((await scrape(opsPort)).samples)).toBeGreaterThanOrEqual(1);
  // The same decision is the warning of the log (docs/limits.md "What is counted and logged").
  expect(svc.lines).toContainEqual(expect.objectContaining({ level: 'warn', message: 'limits degraded: Redis unavailable', decision: 'mcp_sessions_local' }));

  await redis.start();
  const back = await readyzUntil(opsPort, (r) => r.body.status === 'ready', 20_000);
  expect(back).toEqual({ status: 200, body: { status: 'ready', checks: { postgres: 'ok', redis: 'ok', warm: 'ok' } } });
});

/**
 * A POST /mcp that stays in flight until `finish()`: the headers and half of a JSON-RPC body are
 * sent (the credential is checked, then the body waited for). Not an initialize, so it opens no
 * session: answered 400 once whole.
 */
function slowRequest(port: number, key: string) {
  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
  const half = Math.floor(body.length / 2);
  let finish!: () => void;
  const response = new Promise<{ status: number; headers: http.IncomingHttpHeaders }>((resolve, reject) => {
    const req = http.request({
      host: '127.0.0.1', port, method: 'POST', path: '/mcp',
      headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) },
    }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.write(body.slice(0, half));
    finish = () => req.end(body.slice(half));
  });
  return { response, finish: () => finish() };
}

test('SIGTERM: /readyz answers 503 shutting_down while the request in flight drains, then the ops server closes with the process (exit 0)', async () => {
  const acct = await newAccount(h);
  const key = await newKey(h, acct.accountId, acct.owner.email, []);
  const { svc, mcpPort, opsPort } = await startMcp();
  expect((await readyzUntil(opsPort, (r) => r.status === 200)).body).toMatchObject({ status: 'ready' });
  const slow = slowRequest(mcpPort, key);
  await sleep(300); // the request is now in the server, waiting for the rest of its body
  svc.child.kill('SIGTERM');
  await svc.waitFor((l) => l.message === 'shutting down');

  await sleep(300);
  expect(svc.child.exitCode).toBeNull();
  expect(shutdownSteps(svc)).toEqual([]);
  const draining = await readyz(opsPort);
  expect(draining).toEqual({ status: 503, body: { status: 'unavailable', checks: { postgres: 'ok', redis: 'ok', warm: 'ok' }, shutting_down: true } });

  slow.finish();
  const res = await slow.response;
  expect(res.status).toBe(400); // answered (a request without a session), not cut
  expect(res.headers.connection).toBe('close');
  expect(await svc.exited).toEqual({ code: 0, signal: null });
  expect(shutdownSteps(svc)).toEqual(['http', 'pools', 'ops']);
  expect(svc.lines.find((l) => l.message === 'shut down')).toMatchObject({ ok: true });
});

test('SIGTERM during the warm-up: it is cut short, the process exits 0 without a warning', async () => {
  const { svc } = await startMcp();
  const warmBeforeSignal = svc.lines.some((l) => l.message === 'warm');
  svc.child.kill('SIGTERM');
  expect(await svc.exited).toEqual({ code: 0, signal: null });
  expect(shutdownSteps(svc)).toEqual(['http', 'pools', 'ops']);
  expect(svc.lines.filter((l) => l.level === 'error' || l.level === 'warn')).toEqual([]);
  if (!warmBeforeSignal) {
    expect(svc.lines.some((l) => l.message === 'warm-up cut short by shutdown')).toBe(true);
    expect(svc.lines.some((l) => l.message === 'warm')).toBe(false);
  }
});
