import http from 'node:http';
import { createDeps, newSecret, API_READINESS, WORKER_READINESS, startOpsServer, waitReady, type Deps } from '@teamchat/core';
import { engineWarmUp } from '@teamchat/delivery';
import { Client, type Pool } from 'pg';
import { onEveryConnection, poolSize } from '@teamchat/db';
import { createApp } from '../../src/app';
import { apiWarmUp } from '../../src/warm-up';
import { onlyBearer, warmUpPosts, warmUpPostsOnEveryConnection, WARM_UP_POSTS } from '../../src/warm-up-posts';
import { newAccount, newKey, startHarness, type Harness } from '../../../../test/support/harness';
import { createMigratedDatabase, dropDatabase } from '../../../../test/support/databases';
import { expiredLogWeeks, makeExpiredLogWeek } from '../../../../test/support/webhooks';

/** The /readyz body (docs/operations.md, "Readiness"). */
type Readyz = { checks: Record<string, string> };

/**
 * docs/operations.md "Readiness": a serving process (the API, the worker) is created cold and
 * /readyz answers 503 (`warm: pending`) until its warm-up ran: every pool connection open with
 * the named statements prepared on it, the Redis scripts loaded, its code exercised.
 */
let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h.close();
});

function listen(app: http.RequestListener): Promise<http.Server> {
  return new Promise((resolve) => {
    const s = http.createServer(app).listen(0, '127.0.0.1', () => resolve(s));
  });
}

/**
 * The named statements prepared on each of the pool's connections (the main pool by default),
 * each with how many times it ran there (its custom and generic plans counted together).
 */
async function preparedPerConnection(deps: Deps, pool: Pool = deps.database.pool): Promise<Array<Map<string, number>>> {
  return onEveryConnection(pool, async (c) => new Map(
    (await c.query<{ name: string; runs: string }>('SELECT name, generic_plans + custom_plans AS runs FROM pg_prepared_statements')).rows.map((r) => [r.name, Number(r.runs)]),
  ));
}

test('the API process: /readyz is 503 (warm: pending) on both hosts until the warm-up ran, then 200; every connection has the statements prepared and has run real posts; nothing was written', async () => {
  const deps = createDeps(h.deps.config, 'api', { serving: true, poolSize: 4 });
  await waitReady(deps.redis);
  const api = await listen(createApp(deps, 'api'));
  const web = await listen(createApp(deps, 'web'));
  const ops = await startOpsServer(deps, 0, API_READINESS, '127.0.0.1');
  const url = (s: http.Server, p: string) => `http://127.0.0.1:${(s.address() as import('node:net').AddressInfo).port}${p}`;
  try {
    for (const s of [api, web]) {
      const cold = await fetch(url(s, '/readyz'));
      expect(cold.status).toBe(503);
      expect(((await cold.json()) as Readyz).checks).toEqual({ postgres: 'ok', redis: 'ok', warm: 'pending' });
    }
    expect((await fetch(`http://127.0.0.1:${ops.port}/readyz`)).status).toBe(503);
    // Only the warm-up's own messages are counted (other test files share this database meanwhile).
    const warmUpMessages = async () => Number((await h.deps.database.pool.query("SELECT count(*) AS n FROM messages WHERE text LIKE 'warm-up%'")).rows[0].n);
    const messagesBefore = await warmUpMessages();

    await deps.warmth.run(apiWarmUp(deps, { api, web }), deps.logger);

    for (const s of [api, web]) {
      const warm = await fetch(url(s, '/readyz'));
      expect(warm.status).toBe(200);
      expect(((await warm.json()) as Readyz).checks).toEqual({ postgres: 'ok', redis: 'ok', warm: 'ok' });
    }
    expect((await fetch(`http://127.0.0.1:${ops.port}/readyz`)).status).toBe(200);
    // The pool is open to its size and no connection meets the first load without its statements.
    const prepared = await preparedPerConnection(deps);
    expect(prepared).toHaveLength(4);
    for (const names of prepared) {
      for (const name of ['auth_credential', 'auth_session', 'post_message_facts', 'post_message', 'messages_page']) expect(names.has(name)).toBe(true);
    }
    // Every connection has run the post's statement for real posts, not only its prepared run
    // with NULLs: the warm-up's posts are spread over the whole pool (a connection's first posts
    // pay for its first plans, caches and the search trigger's first compilation). The credential
    // and the post's facts are read once per warm-up account, then cached, so only the post's own
    // statement counts the posts.
    const each = Math.ceil(WARM_UP_POSTS / poolSize(deps.database.pool));
    for (const runs of prepared) expect(runs.get('post_message')).toBeGreaterThan(each);
    // The by-key pool (the page read's one generic plan) is open to its size with its statements.
    const byKeyPrepared = await preparedPerConnection(deps, deps.database.byKeyPool!);
    expect(byKeyPrepared).toHaveLength(4);
    for (const names of byKeyPrepared) expect(names.has('messages_page')).toBe(true);
    // The statements ran with NULL parameters in a transaction rolled back: nothing written.
    expect(await warmUpMessages()).toBe(messagesBefore);
    // The Redis scripts are loaded: no first call pays a NOSCRIPT.
    const { RedisScript } = await import('@teamchat/core');
    const loaded = (await deps.redis.script('EXISTS', ...RedisScript.defined.map((s) => s.sha))) as number[];
    expect(loaded.length).toBeGreaterThan(0);
    expect(loaded.every((x) => x === 1)).toBe(true);
  } finally {
    await ops.close();
    await new Promise((r) => api.close(r));
    await new Promise((r) => web.close(r));
    await deps.close();
  }
});

test('the worker process: its operations port answers /readyz 503 until the engine warm-up (statements, scripts, dry passes of relay scan, fan-out and pipeline, attempts in memory, deliveries on real rows rolled back, the expired weeks of the log detached) ran, then 200', async () => {
  // A database of its own: the warm-up detaches the weeks older than 30 days, which a test
  // sharing the run's database may be writing into.
  const db = await createMigratedDatabase('teamchat_warmup');
  const deps = createDeps({ ...h.deps.config, databaseUrl: db.url }, 'worker', { serving: true, poolSize: 3 });
  const old = () => expiredLogWeeks(deps.database.db);
  await makeExpiredLogWeek(deps.database.db);
  expect((await old()).length).toBeGreaterThan(0);
  await waitReady(deps.redis);
  const ops = await startOpsServer(deps, 0, WORKER_READINESS, '127.0.0.1');
  try {
    const cold = await fetch(`http://127.0.0.1:${ops.port}/readyz`);
    expect(cold.status).toBe(503);
    expect(((await cold.json()) as Readyz).checks.warm).toBe('pending');
    const steps = engineWarmUp(deps);
    expect(steps.map((s) => s.name)).toEqual(['postgres', 'redis_scripts', 'dry_pass', 'attempts', 'deliveries', 'log_weeks']);
    await deps.warmth.run(steps, deps.logger);
    expect((await fetch(`http://127.0.0.1:${ops.port}/readyz`)).status).toBe(200);
    for (const names of await preparedPerConnection(deps)) {
      for (const name of ['webhook_fanout_read_many', 'webhook_fanout_write', 'webhook_claim_and_read', 'webhook_unrelayed_read', 'webhook_close_delivered_claims']) expect(names.has(name)).toBe(true);
    }
    // the log's weeks past the 30 days were detached and dropped before ready
    expect(await old()).toEqual([]);
  } finally {
    await ops.close();
    await deps.close();
    await dropDatabase(db.name);
  }
});

test('the API warm-up posts go through the real app and leave nothing, on one connection or spread over the pool: no person, account, message or event of theirs committed', async () => {
  // Counted by what only the warm-up writes (other test files share this database meanwhile).
  const q = async (sql: string) => Number((await h.deps.database.pool.query<{ n: string }>(sql)).rows[0].n);
  const theirs = async () => [
    await q("SELECT count(*) AS n FROM users WHERE email LIKE '%@warm-up.invalid'"),
    await q("SELECT count(*) AS n FROM messages WHERE text LIKE 'warm-up message %'"),
    await q("SELECT count(*) AS n FROM events WHERE data->'content'->>'text' LIKE 'warm-up message %'"),
  ];
  expect(await theirs()).toEqual([0, 0, 0]);
  expect(await warmUpPosts(h.deps, 12)).toBe(12);
  expect(await theirs()).toEqual([0, 0, 0]);
  // Spread over the pool: as many transactions as connections, side by side, each rolled back.
  const connections = poolSize(h.deps.database.pool);
  expect(await warmUpPostsOnEveryConnection(h.deps, 12)).toBe(connections * Math.ceil(12 / connections));
  expect(await theirs()).toEqual([0, 0, 0]);
});

test("the warm-up posts' server lets in only the warm-up's own key: any other credential, or none, is answered 403 and reaches nothing", async () => {
  const reached: string[] = [];
  const key = newSecret('api_key');
  const server = await listen(onlyBearer(`Bearer ${key}`, (req, res) => {
    reached.push(String(req.headers.authorization));
    res.end('ok');
  }));
  const url = `http://127.0.0.1:${(server.address() as import('node:net').AddressInfo).port}/accounts/acct_x/channels`;
  try {
    // A real, valid key of a real account is refused as well: the warm-up's app runs on the
    // warm-up's transaction with the limits off, and is no one else's to use.
    const other = await newAccount(h);
    const otherKey = await newKey(h, other.accountId, other.owner.email, []);
    for (const headers of [{ authorization: `Bearer ${otherKey}` }, { authorization: `Bearer ${newSecret('api_key')}` }, { authorization: `Basic ${key}` }, {}] as Array<Record<string, string>>) {
      expect((await fetch(url, { method: 'POST', headers })).status).toBe(403);
    }
    expect(reached).toEqual([]);
    expect((await fetch(url, { method: 'POST', headers: { authorization: `Bearer ${key}` } })).status).toBe(200);
    expect(reached).toEqual([`Bearer ${key}`]);
  } finally {
    await new Promise((r) => server.close(r));
  }
});

test('deps made for tests and tools are warm from the start', () => {
  expect(h.deps.warmth.warm).toBe(true);
});

test('a table held by another transaction fails the API warm-up posts within seconds (the API goes on to be ready), leaving nothing', async () => {
  // A database of its own: the table is held against every writer of it.
  const db = await createMigratedDatabase('teamchat_warmlock');
  const deps = createDeps({ ...h.deps.config, databaseUrl: db.url }, 'api', { serving: true, poolSize: 2 });
  const locker = new Client({ connectionString: db.url });
  await locker.connect();
  try {
    await waitReady(deps.redis);
    await locker.query('BEGIN');
    await locker.query('LOCK TABLE messages IN SHARE MODE');
    const started = Date.now();
    // The channel is made; the first post's statement meets the held table and gives up waiting
    // (its answer a 500, the error handler's for a database error), which fails the step.
    await expect(warmUpPosts(deps, 3)).rejects.toThrow(/warm-up post 0 was answered 500/);
    expect(Date.now() - started).toBeLessThan(10_000);
    await locker.query('COMMIT');
    expect(Number((await deps.database.pool.query('SELECT count(*) AS n FROM messages')).rows[0].n)).toBe(0);
  } finally {
    await locker.end().catch(() => undefined);
    await deps.close();
    await dropDatabase(db.name);
  }
});
