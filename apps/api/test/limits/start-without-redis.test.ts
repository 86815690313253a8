import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { createDeps, waitReady } from '@teamchat/core';
import { webhookQueuesFor } from '@teamchat/delivery';
import { bearer, newAccount, newKey, startHarness, type Harness } from '../../../../test/support/harness';
import { serviceEnv, startService, type Service } from '../../../../test/support/processes';
import { testRedisServer, type TestRedisServer } from '../../../../test/support/redis-server';
import { createApp } from '../../src/app';

/**
 * An API process started while Redis is away (docs/limits.md "When Redis is away"): it serves
 * without Redis, so it starts without it too, degraded, and uses Redis once Redis answers. The
 * process is real (tsx on the entrypoint, as `npm start` runs it); the Redis is a redis-server
 * this file starts only once the API is up.
 */
jest.setTimeout(90_000);

let h: Harness;
let redis: TestRedisServer;
const running: Service[] = [];
beforeAll(async () => {
  h = await startHarness();
  redis = await testRedisServer();
});
afterAll(async () => {
  for (const s of running) if (s.child.exitCode === null && s.child.signalCode === null) s.child.kill('SIGKILL');
  await redis?.stop();
  await h?.close();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function readyz(ops: number): Promise<{ status: number; body: { status: string; checks: Record<string, string> } }> {
  const res = await fetch(`http://127.0.0.1:${ops}/readyz`);
  return { status: res.status, body: (await res.json()) as { status: string; checks: Record<string, string> } };
}

test('the API process starts while Redis is away: ready and degraded, it serves, and uses Redis once Redis answers', async () => {
  await redis.stop();
  const svc = startService('apps/api/src/server.ts', serviceEnv({ REDIS_URL: redis.url }));
  running.push(svc);
  const started = await svc.waitFor((l) => l.message === 'starting without Redis: it did not answer; limits are counted in this process until it does', 40_000);
  expect(started.level).toBe('warn');
  const line = await svc.waitFor((l) => l.message === 'listening', 40_000);
  const ops = line.ops_port as number;
  const api = `http://127.0.0.1:${line.api_port as number}`;
  let ready = await readyz(ops);
  for (let i = 0; ready.status !== 200 && i < 600; i += 1) {
    await sleep(50);
    ready = await readyz(ops);
  }
  expect(ready).toEqual({ status: 200, body: { status: 'degraded', checks: { postgres: 'ok', redis: 'failed', warm: 'ok' } } });

  const acct = await newAccount(h, 'pro');
  const key = await newKey(h, acct.accountId, acct.owner.email, ['account:manage']);
  const call = async (method: string, path: string, body?: unknown) => {
    const t0 = Date.now();
    const res = await fetch(`${api}/accounts/${acct.accountId}${path}`, {
      method, headers: { ...bearer(key), 'Content-Type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body), signal: AbortSignal.timeout(8_000),
    });
    return { status: res.status, body: (await res.json()) as Record<string, any>, ms: Date.now() - t0 };
  };
  const channel = await call('POST', '/channels', { name: 'started-without-redis' });
  expect(channel.status).toBe(201);
  const posted = await call('POST', `/channels/${channel.body.id}/messages`, { text: 'no Redis yet' });
  expect(posted.status).toBe(201);

  await redis.start();
  for (let i = 0; ready.body.status !== 'ready' && i < 200; i += 1) {
    await sleep(50);
    ready = await readyz(ops);
  }
  expect(ready).toEqual({ status: 200, body: { status: 'ready', checks: { postgres: 'ok', redis: 'ok', warm: 'ok' } } });
  const usage = await call('GET', '/usage');
  for (let i = 0; usage.body.degraded && i < 40; i += 1) {
    await sleep(100);
    Object.assign(usage, await call('GET', '/usage'));
  }
  expect(usage.body.degraded).toBe(false);
});

test('the MCP server starts while Redis is away too, and its tools answer', async () => {
  await redis.stop();
  const env = serviceEnv({ REDIS_URL: redis.url });
  const api = startService('apps/api/src/server.ts', env);
  running.push(api);
  const apiPort = (await api.waitFor((l) => l.message === 'listening', 40_000)).api_port as number;
  const mcp = startService('apps/mcp/src/server.ts', { ...env, MCP_PORT: '0', MCP_API_URL: `http://127.0.0.1:${apiPort}` });
  running.push(mcp);
  expect((await mcp.waitFor((l) => typeof l.message === 'string' && l.message.startsWith('starting without Redis'), 40_000)).level).toBe('warn');
  const port = (await mcp.waitFor((l) => l.message === 'listening', 40_000)).mcp_port as number;

  const acct = await newAccount(h, 'pro');
  const key = await newKey(h, acct.accountId, acct.owner.email, ['account:manage']);
  const client = new Client({ name: 'start-without-redis', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${key}` } } }));
  try {
    expect((await client.listTools()).tools.length).toBeGreaterThan(0);
    const listed = await client.callTool({ name: 'list_channels', arguments: {} });
    expect(listed.isError).toBeFalsy();
  } finally {
    await client.close();
  }
});

test('queues made while Redis is away fail their adds at once, and add once Redis answers', async () => {
  await redis.stop();
  const deps = createDeps({ ...h.deps.config, redisUrl: redis.url }, 'api');
  try {
    createApp(deps, 'api');
    const t0 = Date.now();
    await expect(deps.jobQueue.enqueue('job_never')).rejects.toThrow(/Redis unavailable/);
    await expect(webhookQueuesFor(deps).enqueueDelivery('dlv_never')).rejects.toThrow(/Redis unavailable/);
    await expect(webhookQueuesFor(deps).wakeAccounts(['acct_never'])).rejects.toThrow(/Redis unavailable/);
    expect(Date.now() - t0).toBeLessThan(2_000);

    await redis.start();
    await waitReady(deps.redis, 10_000);
    await webhookQueuesFor(deps).delivery.waitUntilReady();
    await deps.jobQueue.queue.waitUntilReady();
    await expect(deps.jobQueue.enqueue(`job_${Date.now()}`)).resolves.toBeUndefined();
    await expect(webhookQueuesFor(deps).enqueueDelivery(`dlv_${Date.now()}`)).resolves.toBeUndefined();
  } finally {
    await webhookQueuesFor(deps).close();
    await deps.close();
  }
});
