import http from 'node:http';
import { Client } from 'pg';
import { testDatabaseUrl } from '../../../../test/support/env';
import { serviceEnv, startService, type Service } from '../../../../test/support/processes';

/**
 * Graceful shutdown (docs/operations.md, "Graceful shutdown"): real processes (tsx on the entrypoints, as `npm start`
 * runs them) on ephemeral ports, real signals.
 */
jest.setTimeout(60_000);

const running: Service[] = [];
afterEach(() => {
  for (const s of running.splice(0)) if (s.child.exitCode === null && s.child.signalCode === null) s.child.kill('SIGKILL');
});

/**
 * An API process, once ready: the tests below need their slow request to be in the server when
 * the signal comes, and while the warm-up runs (right after 'listening', longer on a loaded
 * machine) the request may not have been read yet, so the HTTP step would find nothing in flight.
 */
async function startApi(): Promise<{ svc: Service; api: number; web: number; ops: number }> {
  const svc = startService('apps/api/src/server.ts', serviceEnv());
  running.push(svc);
  const line = await svc.waitFor((l) => l.message === 'listening', 40_000);
  const ops = line.ops_port as number;
  for (let i = 0; (await fetch(`http://127.0.0.1:${ops}/readyz`)).status !== 200; i++) {
    if (i > 400) throw new Error('the API did not become ready');
    await sleep(50);
  }
  return { svc, api: line.api_port as number, web: line.web_port as number, ops };
}

/**
 * A request that stays in flight until `finish()` is called: the headers and half of a JSON
 * body are sent, the rest waits. Resolves with the status, headers and body once answered.
 */
function slowRequest(port: number) {
  const body = JSON.stringify({ email: 'nobody@example.test', password: 'not the password at all' });
  const half = Math.floor(body.length / 2);
  let finish!: () => void;
  const response = new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }>((resolve, reject) => {
    const req = http.request({
      host: '127.0.0.1', port, method: 'POST', path: '/auth/sign-in',
      headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) },
    }, (res) => {
      let text = '';
      res.on('data', (c) => { text += c; });
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: text }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.write(body.slice(0, half));
    finish = () => req.end(body.slice(half));
  });
  return { response, finish: () => finish() };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('SIGTERM: the API drains (readiness 503), finishes the request in flight, then closes pools and exits 0', async () => {
  const { svc, web, ops } = await startApi();
  const slow = slowRequest(web);
  await sleep(300); // the request is now in the server, waiting for the rest of its body
  svc.child.kill('SIGTERM');
  await svc.waitFor((l) => l.message === 'shutting down');

  // Still draining: the HTTP step waits for the request in flight; readiness says so on the operations port.
  // (New connections are not probed: the closed ephemeral port may already belong to another process.)
  await sleep(300);
  expect(svc.child.exitCode).toBeNull();
  expect(svc.lines.some((l) => l.message === 'shutdown step done')).toBe(false);
  const ready = await fetch(`http://127.0.0.1:${ops}/readyz`);
  expect(ready.status).toBe(503);
  expect(await ready.json()).toMatchObject({ status: 'unavailable', shutting_down: true });

  slow.finish();
  const res = await slow.response;
  expect(res.status).toBe(401); // the sign-in was answered (wrong password), not cut
  expect(JSON.parse(res.body).error.code).toBe('unauthorized');
  expect(res.headers['x-request-id']).toBeDefined();
  expect(res.headers.connection).toBe('close');

  expect(await svc.exited).toEqual({ code: 0, signal: null });
  expect(shutdownSteps(svc)).toEqual(['http', 'pools', 'ops']);
  expect(svc.lines.find((l) => l.message === 'shut down')).toMatchObject({ ok: true });
});

test('a second SIGTERM exits at once, without waiting for the request in flight', async () => {
  const { svc, web } = await startApi();
  const slow = slowRequest(web);
  slow.response.catch(() => undefined);
  await sleep(300);
  svc.child.kill('SIGTERM');
  await svc.waitFor((l) => l.message === 'shutting down');
  svc.child.kill('SIGTERM');
  expect(await svc.exited).toEqual({ code: 143, signal: null });
  await expect(slow.response).rejects.toThrow(/socket hang up|ECONNRESET/);
});

/**
 * Four clients posting to the API host until the process exits, as clients that do not wait for readiness
 * would (posts with an unknown key: the body parser, the credential statement, the error
 * handler). Connection errors are expected once the server closes. Meanwhile the warm-up's own
 * calls, /healthz among them, answered at once by the app, go on connections opened before the
 * signal: what crashed the drain before `drainable` set its header ahead of the app.
 */
function requestsUntilExit(port: number, exited: Promise<unknown>): Promise<void> {
  let stopped = false;
  void exited.then(() => { stopped = true; });
  const loop = async () => {
    while (!stopped) {
      await fetch(`http://127.0.0.1:${port}/accounts/acct_x/channels/ch_x/messages`, {
        method: 'POST', headers: { authorization: 'Bearer tc_live_unknown', 'content-type': 'application/json' }, body: '{"text":"hi"}',
      }).then((r) => r.arrayBuffer(), () => sleep(5));
    }
  };
  return Promise.all([loop(), loop(), loop(), loop()]).then(() => undefined);
}

test.each([0, 300, 800])('SIGTERM %i ms into the warm-up, under requests: the warm-up is cut short, nothing is written, the API exits 0', async (delayMs) => {
  const db = new Client({ connectionString: testDatabaseUrl() });
  await db.connect();
  try {
    const warmUpMessages = async () => Number((await db.query("SELECT count(*) AS n FROM messages WHERE text LIKE 'warm-up%'")).rows[0].n);
    const before = await warmUpMessages();
    const svc = startService('apps/api/src/server.ts', serviceEnv());
    running.push(svc);
    const line = await svc.waitFor((l) => l.message === 'listening', 40_000);
    const clients = requestsUntilExit(line.api_port as number, svc.exited);
    await sleep(delayMs);
    const warmBeforeSignal = svc.lines.some((l) => l.message === 'warm');
    svc.child.kill('SIGTERM');
    expect(await svc.exited).toEqual({ code: 0, signal: null });
    await clients;
    expect(shutdownSteps(svc)).toEqual(['http', 'pools', 'ops']);
    expect(svc.lines.find((l) => l.message === 'shut down')).toMatchObject({ ok: true });
    expect(svc.lines.filter((l) => l.level === 'error' || l.level === 'warn')).toEqual([]);
    expect(await warmUpMessages()).toBe(before);
    // At 0 ms the signal comes during the first of the warm-up's steps, and the others never start
    // (at 800 ms on a fast machine the warm-up may have ended: then this is the plain case).
    if (delayMs === 0) {
      expect(warmBeforeSignal).toBe(false);
      expect(svc.lines.some((l) => l.message === 'warm-up cut short by shutdown')).toBe(true);
      expect(svc.lines.some((l) => l.message === 'warm')).toBe(false);
    }
  } finally {
    await db.end();
  }
});

test('a worker with --ops-port 0 serves /metrics on a free port and exits 0 on SIGTERM', async () => {
  const svc = startService('apps/worker/src/main.ts', serviceEnv({ WORKER_OPS_PORT: '9465' }), ['--ops-port', '0']);
  running.push(svc);
  const line = await svc.waitFor((l) => l.message === 'worker started', 40_000);
  const port = line.ops_port as number;
  expect(port).toBeGreaterThan(0);
  expect(port).not.toBe(9465);
  const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  expect(metrics).toContain('teamchat_queue_jobs{queue="jobs",state="waiting"}');
  expect((await fetch(`http://127.0.0.1:${port}/readyz`)).status).toBe(200);
  svc.child.kill('SIGTERM');
  expect(await svc.exited).toEqual({ code: 0, signal: null });
  expect(shutdownSteps(svc)).toEqual(['workers', 'pools', 'ops']);
});

test.each([0, 300, 800])('a worker signalled %i ms into its warm-up exits 0 and never starts its engine', async (delayMs) => {
  const svc = startService('apps/worker/src/main.ts', serviceEnv(), ['--ops-port', '0']);
  running.push(svc);
  await svc.waitFor((l) => l.message === 'warming up', 40_000);
  await sleep(delayMs);
  const startedBeforeSignal = svc.lines.some((l) => l.message === 'worker started');
  svc.child.kill('SIGTERM');
  expect(await svc.exited).toEqual({ code: 0, signal: null });
  expect(shutdownSteps(svc)).toEqual(['workers', 'pools', 'ops']);
  expect(svc.lines.find((l) => l.message === 'shut down')).toMatchObject({ ok: true });
  expect(svc.lines.filter((l) => l.level === 'error' || l.level === 'warn')).toEqual([]);
  if (!startedBeforeSignal) expect(svc.lines.some((l) => l.message === 'worker started')).toBe(false);
  // At 0 ms the signal always comes during the warm-up (it takes ~1 s).
  if (delayMs === 0) {
    expect(startedBeforeSignal).toBe(false);
    expect(svc.lines.some((l) => l.message === 'warm-up cut short by shutdown')).toBe(true);
  }
});

/** The shutdown steps a service logged, in order (a warm-up cut short by the signal logs its own step lines). */
function shutdownSteps(svc: Service): unknown[] {
  return svc.lines.filter((l) => typeof l.message === 'string' && l.message.startsWith('shutdown step')).map((l) => l.step);
}
