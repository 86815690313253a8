import request from 'supertest';
import { DEFAULT_REDIS_COMMAND_TIMEOUT_MS, randomToken, waitReady } from '@teamchat/core';
import { bearer, newAccount, newKey, startHarness, type Harness } from '../../../../test/support/harness';
import { testRedisServer, type TestRedisServer } from '../../../../test/support/redis-server';
import { tcpProxy, type TcpProxy } from '../../../../test/support/tcp-proxy';

/**
 * A Redis connection whose other end went away without a word (the Redis host lost, a failover
 * that moved its address: no reset reaches the client) looks open for as long as TCP takes to
 * give up, about 15 minutes: every command on it times out, though a new connection would be
 * answered. The process notices (a PING unanswered in time) and connects again
 * (docs/limits.md "When Redis is away"). A real redis-server behind a TCP proxy that strands the
 * open connections.
 */
jest.setTimeout(60_000);

let server: TestRedisServer;
let proxy: TcpProxy;
let h: Harness;
beforeAll(async () => {
  server = await testRedisServer();
  proxy = await tcpProxy({ host: '127.0.0.1', port: server.port });
  h = await startHarness({
    redisUrl: `redis://127.0.0.1:${proxy.port}`, redisPrefix: `test-silent-${randomToken(8)}`, redisCommandTimeoutMs: DEFAULT_REDIS_COMMAND_TIMEOUT_MS,
  });
});
afterAll(async () => {
  await h?.close();
  await proxy?.close();
  await server?.stop();
});

test('a Redis connection gone silent is replaced: the API serves meanwhile (degraded), and its limits are in Redis again within seconds', async () => {
  const acct = await newAccount(h, 'pro');
  const key = await newKey(h, acct.accountId, acct.owner.email, ['account:manage']);
  const usage = () => request(h.api).get(`/accounts/${acct.accountId}/usage`).set(bearer(key)).timeout(10_000);
  expect((await usage()).body.degraded).toBe(false);

  proxy.strandOpenConnections();
  const away = await usage();
  expect(away.status).toBe(200);

  const started = Date.now();
  let back = await usage();
  while (back.body.degraded !== false && Date.now() - started < 30_000) {
    await new Promise((r) => setTimeout(r, 250));
    back = await usage();
  }
  expect(back.body.degraded).toBe(false);
  await waitReady(h.deps.redis, 1_000);
  expect(await h.deps.redis.ping()).toBe('PONG');
});
