import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import { Client } from 'pg';
import { waitReady } from '@teamchat/core';
import { sql } from '@teamchat/db';
import { startHarness, type Harness } from '../../../test/support/harness';
import { createMigratedDatabase, dropDatabase } from '../../../test/support/databases';
import { startReceiver, type Receiver } from '../../../test/support/https-receiver';
import { makeChannel, messagingAccount, post } from '../../../test/support/messaging';
import { createEndpointRow, deliveriesOf, eventually, webhookConfig } from '../../../test/support/webhooks';
import { startWorkerProcess, workerEnv, type WorkerProcess } from '../../../test/support/worker-process';

/**
 * Crash safety and the in-flight cap per account (spec: Limits; docs/webhooks.md), with real worker processes
 * (`tsx apps/worker/src/main.ts`). They relay every account's events, so this file has a
 * database of its own (built by the real migrations).
 */
jest.setTimeout(120_000);

let dbName: string;
let dbUrl: string;
let rx: Receiver;
const workers: WorkerProcess[] = [];

beforeAll(async () => {
  ({ name: dbName, url: dbUrl } = await createMigratedDatabase('teamchat_whcrash'));
  rx = await startReceiver();
});
afterEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.kill().catch(() => undefined)));
});
afterAll(async () => {
  await rx.close();
  await dropDatabase(dbName);
});

async function harness(extra: Parameters<typeof webhookConfig>[0] = {}): Promise<Harness> {
  return startHarness(webhookConfig({ databaseUrl: dbUrl, limitsEnabled: false, ...extra }));
}

async function worker(h: Harness): Promise<WorkerProcess> {
  const w = await startWorkerProcess(workerEnv(h.deps.config));
  workers.push(w);
  return w;
}

async function scene(h: Harness) {
  const a = await messagingAccount(h);
  const ch = await makeChannel(a.ownerApi);
  const path = `/c-${randomBytes(3).toString('hex')}`;
  const ep = await createEndpointRow(h, { accountId: a.accountId, createdByUserId: a.owner.userId, url: rx.url(path), events: ['message.posted'] });
  return { a, ch, ep, path, mine: () => rx.received.filter((r) => r.path === path) };
}

test('a worker killed (SIGKILL) mid-delivery loses nothing: another attempts the same row again (at-least-once)', async () => {
  const h = await harness();
  try {
    const s = await scene(h);
    const first = await worker(h);
    rx.script({ hang: true });
    await post(s.a.ownerApi, s.ch, { text: 'in flight when the worker dies' });
    await eventually(async () => s.mine().length === 1, 30_000, 'the first attempt to arrive');
    await first.kill();
    const [row] = await deliveriesOf(h, s.ep.id);
    expect(row.status).toBe('pending');
    expect(row.claimedUntil).toBeInstanceOf(Date); // claimed by the dead worker until its claim runs out
    await worker(h);
    const done = await eventually(async () => {
      const rows = await deliveriesOf(h, s.ep.id);
      return rows[0]?.status === 'delivered' ? rows : null;
    }, 60_000, 'the re-attempt');
    expect(done).toHaveLength(1);
    const got = s.mine();
    expect(got).toHaveLength(2);
    expect(got[1].headers['webhook-id']).toBe(got[0].headers['webhook-id']); // same event: receivers dedupe on it
    expect(got[1].body).toBe(got[0].body);
  } finally {
    await h.close();
  }
});

test('a fan-out that a crash of the PostgreSQL server lost (the worker\'s by-key writes commit asynchronously): the event fans out again, and its receiver gets it a second time with a new delivery id and the same event id', async () => {
  const h = await harness();
  try {
    const s = await scene(h);
    await worker(h);
    await post(s.a.ownerApi, s.ch, { text: 'delivered, then its fan-out lost' });
    await eventually(async () => (await deliveriesOf(h, s.ep.id))[0]?.status === 'delivered', 30_000, 'the first delivery recorded');
    const [first] = await deliveriesOf(h, s.ep.id);
    // What the crash leaves: the event (committed synchronously by the API) as it was before its
    // fan-out, and none of the fan-out's rows.
    await h.deps.database.db.transaction(async (tx) => {
      await tx.execute(sql`DELETE FROM webhook_deliveries WHERE event_id = ${first.eventId}`);
      await tx.execute(sql`DELETE FROM webhook_bodies WHERE event_id = ${first.eventId}`);
      await tx.execute(sql`UPDATE events SET relayed_at = NULL WHERE id = ${first.eventId}`);
    });
    const again = await eventually(async () => {
      const rows = await deliveriesOf(h, s.ep.id);
      return rows[0]?.status === 'delivered' ? rows : null;
    }, 30_000, 'the event fanned out and delivered again');
    expect(again).toHaveLength(1);
    expect(again[0].eventId).toBe(first.eventId);
    expect(again[0].id).not.toBe(first.id);
    const got = s.mine();
    expect(got).toHaveLength(2);
    expect(got[1].headers['webhook-id']).toBe(first.eventId); // receivers dedupe on it (spec: Webhooks)
    expect(got[1].headers['webhook-id']).toBe(got[0].headers['webhook-id']);
    expect(got[1].headers['x-service-delivery']).not.toBe(got[0].headers['x-service-delivery']);
    expect(JSON.parse(got[1].body).id).toBe(first.eventId);
  } finally {
    await h.close();
  }
});

test('a worker killed (SIGKILL) mid-fan-out: another worker takes the fan-out job over within ~15 s and delivers', async () => {
  const h = await harness();
  const locker = new Client({ connectionString: dbUrl });
  await locker.connect();
  try {
    const s = await scene(h);
    // Hold the stored bodies against writes: the fan-out's write statement (it inserts the
    // bodies with the deliveries) waits for the table, so the worker is caught inside its fan-out
    // job, with the job active under its BullMQ lock, before anything of that statement is
    // written. (Not the delivery log itself: a starting worker's warm-up runs the attempt
    // pipeline's claim, an UPDATE of no row, which would wait for it too.)
    await locker.query('BEGIN');
    await locker.query('LOCK TABLE webhook_bodies IN SHARE MODE');
    const first = await worker(h);
    await post(s.a.ownerApi, s.ch, { text: 'fanned out by a worker that dies' });
    const blocked = await eventually(async () => {
      const r = await locker.query<{ pid: number }>(
        `SELECT DISTINCT l.pid FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid WHERE NOT l.granted AND a.datname = $1`, [dbName]);
      return r.rows.length > 0 ? r.rows.map((x) => x.pid) : null;
    }, 30_000, 'the fan-out to wait on the endpoint row');
    await first.kill();
    const killedAt = Date.now();
    // A backend waiting on a lock notices its client's death only when it answers: end it, as
    // PostgreSQL's own connection check would, so the dead worker's statement writes nothing.
    for (const pid of blocked) await locker.query('SELECT pg_terminate_backend($1)', [pid]);
    await locker.query('COMMIT');
    expect(await deliveriesOf(h, s.ep.id)).toHaveLength(0);
    await worker(h);
    await eventually(async () => {
      const rows = await deliveriesOf(h, s.ep.id);
      return rows[0]?.status === 'delivered' ? rows : null;
    }, 60_000, 'the fan-out taken over and delivered');
    // BullMQ's defaults (lock 30 s, stall check 30 s) would take 30-60 s; ours: lock 10 s + check 3 s.
    expect(Date.now() - killedAt).toBeLessThan(25_000);
    expect(s.mine()).toHaveLength(1);
  } finally {
    await locker.end().catch(() => undefined);
    await h.close();
  }
});

test('two worker processes never have more than max(4, ceil(seats/25)) deliveries of one account in flight', async () => {
  const h = await harness();
  try {
    const s = await scene(h); // one seat: the cap is 4
    await Promise.all([worker(h), worker(h)]);
    rx.fallback = { status: 200, delayMs: 400 };
    const n = 16;
    await Promise.all(Array.from({ length: n }, (_, i) => post(s.a.ownerApi, s.ch, { text: `burst ${i}` })));
    await eventually(async () => {
      const rows = await deliveriesOf(h, s.ep.id);
      return rows.length === n && rows.every((r) => r.status === 'delivered');
    }, 60_000, 'every delivery');
    expect(rx.maxInFlightByPath.get(s.path)).toBe(4);
    expect(new Set(s.mine().map((r) => r.headers['webhook-id'])).size).toBe(n);
  } finally {
    rx.fallback = { status: 200 };
    await h.close();
  }
});

/** A free port below the kernel's ephemeral range, so no outgoing connection takes it while Redis is down. */
async function freePort(): Promise<number> {
  for (;;) {
    const port = 30_000 + Math.floor(Math.random() * 2_700);
    const ok = await new Promise<boolean>((resolve) => {
      const srv = net.createServer();
      srv.once('error', () => resolve(false));
      srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
    });
    if (ok) return port;
  }
}

function startRedis(port: number): Promise<ChildProcess> {
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  return eventually(async () => new Promise<ChildProcess | null>((resolve) => {
    const sock = net.connect(port, '127.0.0.1', () => { sock.end(); resolve(child); });
    sock.on('error', () => resolve(null));
  }), 10_000, 'redis-server');
}

test('Redis stopped while messages are posted: every event is delivered once it returns, once per event id', async () => {
  const port = await freePort();
  let redis = await startRedis(port);
  const h = await harness({ redisUrl: `redis://127.0.0.1:${port}` });
  try {
    await waitReady(h.deps.redis);
    const s = await scene(h);
    await worker(h);
    await post(s.a.ownerApi, s.ch, { text: 'before the outage' });
    await eventually(async () => s.mine().length === 1, 30_000, 'the first delivery');
    redis.kill('SIGKILL'); // all its data is gone with it (no persistence)
    await new Promise((r) => redis.once('exit', r));
    const during = 10;
    for (let i = 0; i < during; i++) await post(s.a.ownerApi, s.ch, { text: `during the outage ${i}` }); // the API keeps answering 201
    await new Promise((r) => setTimeout(r, 1000));
    expect(s.mine()).toHaveLength(1);
    redis = await startRedis(port);
    await eventually(async () => s.mine().length >= 1 + during, 60_000, 'every event after Redis returns');
    await new Promise((r) => setTimeout(r, 1500)); // nothing more arrives
    const ids = s.mine().map((r) => r.headers['webhook-id']);
    expect(ids).toHaveLength(1 + during);
    expect(new Set(ids).size).toBe(1 + during);
    const rows = await deliveriesOf(h, s.ep.id);
    expect(rows.every((r) => r.status === 'delivered')).toBe(true);
  } finally {
    await Promise.all(workers.splice(0).map((w) => w.kill().catch(() => undefined)));
    await h.close();
    redis.kill('SIGKILL');
  }
});

test('SIGTERM finishes the attempts in flight, records them, then exits', async () => {
  const h = await harness();
  try {
    const s = await scene(h);
    const w = await worker(h);
    rx.script({ status: 200, delayMs: 1500 });
    await post(s.a.ownerApi, s.ch, { text: 'in flight at shutdown' });
    await eventually(async () => s.mine().length === 1, 30_000, 'the attempt to arrive');
    const code = await w.stop();
    expect(code).toBe(0);
    const [row] = await deliveriesOf(h, s.ep.id);
    expect(row).toMatchObject({ status: 'delivered', responseStatus: 200, claimedUntil: null });
    expect(row.latencyMs).toBeGreaterThanOrEqual(1400);
  } finally {
    await h.close();
  }
});
