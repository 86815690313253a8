import request from 'supertest';
import { bearer, newAccount, newKey, startHarness, type Harness } from '../../../../test/support/harness';
import { tcpProxy, type TcpProxy } from '../../../../test/support/tcp-proxy';

/**
 * PostgreSQL that stops answering (a network partition, a stalled server: no reset, no answer)
 * must not hang a request: the statement bound is PostgreSQL's own (statement_timeout), which a
 * server that does not answer cannot apply, so the client bounds each query and each connect
 * too (docs/operations.md "When PostgreSQL does not answer"). The PostgreSQL is the real one,
 * behind a TCP proxy this file freezes.
 */
jest.setTimeout(60_000);

const BOUND_MS = 1000;
let h: Harness;
let behind: Harness;
let proxy: TcpProxy;
beforeAll(async () => {
  h = await startHarness();
  const url = new URL(h.deps.config.databaseUrl);
  proxy = await tcpProxy({ host: url.hostname, port: Number(url.port || 5432) });
  url.host = `127.0.0.1:${proxy.port}`;
  behind = await startHarness({ databaseUrl: url.toString(), dbStatementTimeoutMs: BOUND_MS }, { poolSize: 4 });
});
afterAll(async () => {
  proxy?.thaw();
  await behind?.close();
  await proxy?.close();
  await h?.close();
});

test('reads and posts answer 500 internal within the bound and a few seconds while PostgreSQL does not answer, then serve again once it does', async () => {
  const acct = await newAccount(h, 'pro');
  const key = await newKey(h, acct.accountId, acct.owner.email, ['account:manage']);
  const channels = () => request(behind.api).get(`/accounts/${acct.accountId}/channels`).set(bearer(key)).timeout(30_000);
  const created = await request(behind.api).post(`/accounts/${acct.accountId}/channels`).set(bearer(key)).send({ name: 'through-the-proxy' });
  expect(created.status).toBe(201);
  const post = (text: string) => request(behind.api).post(`/accounts/${acct.accountId}/channels/${created.body.id}/messages`).set(bearer(key)).send({ text }).timeout(30_000);
  expect((await channels()).status).toBe(200);

  proxy.freeze();
  try {
    // Connections the pool holds, and new ones (the pool opens more under concurrency): none answers.
    const started = Date.now();
    // Reads, and posts (a transaction each).
    const answers = await Promise.all([...Array.from({ length: 4 }, () => channels()), post('frozen 1'), post('frozen 2')]);
    const took = Date.now() - started;
    for (const res of answers) {
      expect(res.status).toBe(500);
      expect(res.body.error.code).toBe('internal');
      // an outage worth retrying, told apart from a fault in the request (docs/operations.md)
      expect(res.body.error).toMatchObject({ reason: 'database_unavailable', retry_after: 5 });
      expect(res.headers['retry-after']).toBe('5');
      expect(res.headers['x-request-id']).toMatch(/^req_/);
    }
    expect(took).toBeLessThan(BOUND_MS + 6_000);
  } finally {
    proxy.thaw();
  }
  let res = await channels();
  for (let i = 0; res.status !== 200 && i < 20; i += 1) {
    await new Promise((r) => setTimeout(r, 250));
    res = await channels();
  }
  expect(res.status).toBe(200);
  // No connection the client gave up on is handed out again: every request after serves.
  for (let i = 0; i < 8; i += 1) {
    expect((await post(`after ${i}`)).status).toBe(201);
    expect((await channels()).status).toBe(200);
  }
});

test('connections whose server went away for good are dropped, not handed out again: the pool opens new ones', async () => {
  const acct = await newAccount(h, 'pro');
  const key = await newKey(h, acct.accountId, acct.owner.email, ['account:manage']);
  const created = await request(behind.api).post(`/accounts/${acct.accountId}/channels`).set(bearer(key)).send({ name: 'stranded' });
  expect(created.status).toBe(201);
  const posted = await request(behind.api).post(`/accounts/${acct.accountId}/channels/${created.body.id}/messages`).set(bearer(key)).send({ text: 'react to me' });
  expect(posted.status).toBe(201);
  // A reaction is a transaction of its own (an outbox transaction), not a single statement.
  const react = (i: number) => request(behind.api)
    .put(`/accounts/${acct.accountId}/channels/${created.body.id}/messages/${posted.body.ts}/reactions/${i % 2 ? 'thumbsup' : 'eyes'}`)
    .set(bearer(key)).timeout(30_000);
  // Every connection of the pools in use at once, then all of them stranded.
  await Promise.all(Array.from({ length: 8 }, (_, i) => react(i)));
  proxy.strandOpenConnections();
  const statuses: number[] = [];
  for (let i = 0; i < 16; i += 1) statuses.push((await react(i)).status);
  // A request may meet a stranded connection until each has been given up on once; then they all serve.
  expect(statuses.filter((s) => s >= 300 && s !== 500)).toEqual([]);
  expect(statuses.slice(-6).every((s) => s < 300)).toBe(true);
});
