import request from 'supertest';
import { sql, webhookBodies, webhookDeliveries } from '@teamchat/db';
import { Client } from 'pg';
import { DELIVERY_LOG_RETENTION_MS, PURGE_LOCK_WAIT_MS, deliveryLogPartitions, foldEndpointHealth, newId, purgeDeliveryLog } from '@teamchat/core';
import { bearer, newAccount, newKey, type Harness } from '../../../../test/support/harness';
import { startReceiver, type Receiver } from '../../../../test/support/https-receiver';
import { createEndpointRow, startWebhookHarness } from '../../../../test/support/webhooks';

/**
 * Spec: the delivery log is kept 30 days. The log is partitioned by week of created_at
 * (docs/webhooks.md "Retention"): the purge drops whole weeks older than 30 days (no row
 * deletes), keeps a week that still holds an open row (deleting only its closed rows), and every
 * read of the log is bounded to 30 days, so the log keeps exactly 30 days. A replay of a
 * delivery still in range, in an older partition, writes its new row in the current one.
 */
let h: Harness;
let rx: Receiver;

beforeAll(async () => {
  h = await startWebhookHarness();
  rx = await startReceiver();
});
afterAll(async () => {
  await rx.close();
  await h.close();
});

const HOUR = 3_600_000;
const WEEK = 7 * 24 * HOUR;
const weekStart = (t: number) => {
  const d = new Date(t);
  const day = (d.getUTCDay() + 6) % 7; // Monday = 0
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate()) - day * 24 * HOUR;
};

test('the purge keeps exactly 30 days: whole old weeks dropped, a week with an open row kept, replay across partitions', async () => {
  const a = await newAccount(h);
  const key = await newKey(h, a.accountId, a.owner.email, ['webhooks:manage']);
  const path = `/r-${Math.random().toString(36).slice(2, 8)}`;
  const ep = await createEndpointRow(h, { accountId: a.accountId, createdByUserId: a.owner.userId, url: rx.url(path) });
  const db = h.deps.database.db;
  const now = Date.now();
  const cutoff = now - DELIVERY_LOG_RETENTION_MS;
  const w0 = weekStart(cutoff); // the week the cutoff falls in: kept (part of it is within 30 days)
  await db.execute(sql`SELECT webhook_deliveries_ensure_partitions(${new Date(w0 - 3 * WEEK)}, 2)`);

  const rows: Record<string, { at: number; status: string }> = {
    dropped: { at: w0 - 2 * WEEK + HOUR, status: 'delivered' }, // a whole week older than 30 days, nothing open
    openOld: { at: w0 - WEEK + HOUR, status: 'pending' }, // an open row is never purged: its week stays
    closedOld: { at: w0 - WEEK + 2 * HOUR, status: 'dead' }, // ...and its closed rows are deleted
    justOut: { at: cutoff - 60_000, status: 'delivered' }, // older than 30 days by a minute: out of the log
    justIn: { at: cutoff + HOUR, status: 'dead' }, // within 30 days, in an older partition than today's
    recent: { at: now - 60_000, status: 'delivered' },
  };
  const ids: Record<string, string> = {};
  for (const [name, r] of Object.entries(rows)) {
    const eventId = newId('event');
    const bodyId = newId('webhookBody');
    await db.insert(webhookBodies).values({ id: bodyId, accountId: a.accountId, eventId, eventType: 'message.posted', mode: 'pointers', body: `{"n":"${name}"}` });
    ids[name] = newId('delivery');
    await db.insert(webhookDeliveries).values({
      id: ids[name], accountId: a.accountId, endpointId: ep.id, eventId, eventType: 'message.posted', bodyId, kind: 'event',
      chainId: ids[name], attempt: 1, status: r.status, eventCreatedAt: new Date(r.at), createdAt: new Date(r.at),
      attemptedAt: r.status === 'pending' ? null : new Date(r.at), latencyMs: r.status === 'pending' ? null : 10,
      // the open row waits (an account suspended for weeks): nothing here must pick it up
      nextRetryAt: r.status === 'pending' ? new Date(now + WEEK) : null,
    });
  }
  const partitionOf = async (id: string) => (await db.execute<{ p: string }>(sql`SELECT tableoid::regclass::text AS p FROM webhook_deliveries WHERE id = ${id}`)).rows[0]?.p ?? null;
  const droppedPartition = await partitionOf(ids.dropped);
  expect(droppedPartition).toMatch(/^webhook_deliveries_w\d{8}$/);
  expect(await partitionOf(ids.justIn)).not.toBe(await partitionOf(ids.recent));

  const { purged, busy } = await purgeDeliveryLog(db, new Date(cutoff));
  expect(busy).toBe(0);
  expect(purged).toBeGreaterThanOrEqual(2); // at least the dropped week's row and the old closed row

  // the whole old week is gone as a table (dropped, not deleted row by row)
  expect((await deliveryLogPartitions(db)).map((p) => p.name)).not.toContain(droppedPartition);
  expect((await db.execute(sql`SELECT to_regclass(${droppedPartition}) AS t`)).rows[0].t).toBeNull();
  expect(await partitionOf(ids.dropped)).toBeNull();
  // the week with an open row stays, with only its open row
  expect(await partitionOf(ids.openOld)).not.toBeNull();
  expect(await partitionOf(ids.closedOld)).toBeNull();

  // through the API the log holds exactly the last 30 days
  const base = `/accounts/${a.accountId}/webhooks/${ep.id}`;
  const listed = (await request(h.api).get(`${base}/deliveries?limit=100`).set(bearer(key)).expect(200)).body.data.map((d: { id: string }) => d.id);
  expect(listed).toEqual([ids.recent, ids.justIn]);
  await request(h.api).get(`${base}/deliveries/${ids.justOut}`).set(bearer(key)).expect(404);
  await request(h.api).get(`${base}/deliveries/${ids.justIn}`).set(bearer(key)).expect(200);

  // a replay of a delivery still in range (an older week's partition) writes its row in the current week
  rx.fallback = { status: 200 };
  const replay = await request(h.api).post(`${base}/deliveries/${ids.justIn}/replay`).set(bearer(key)).expect(200);
  expect(replay.body).toMatchObject({ status: 'delivered' });
  expect(rx.received.filter((r) => r.path === path).map((r) => r.body)).toEqual(['{"n":"justIn"}']);
  expect(await partitionOf(replay.body.delivery_id)).toBe(await partitionOf(ids.recent));
  expect(await partitionOf(replay.body.delivery_id)).not.toBe(await partitionOf(ids.justIn));
  await request(h.api).post(`${base}/deliveries/${ids.justOut}/replay`).set(bearer(key)).expect(404);

  // health stays right across the fold: 2 attempts of the last 24 h (the recent row and the replay)
  await foldEndpointHealth(db);
  const health = (await request(h.api).get(`${base}`).set(bearer(key)).expect(200)).body.health;
  expect(health).toMatchObject({ attempts_24h: 2, success_rate_24h: 1, pending_count: 1 });
});

test('a partition the purge detached but could not drop (its drop was cut short) is dropped by the next pass; the detach and the drop are separate transactions, so no delivery statement waits on both', async () => {
  const db = h.deps.database.db;
  // A weekly partition detached from the log, as a pass whose drop did not happen leaves it.
  const name = 'webhook_deliveries_w20200106';
  await db.execute(sql.raw(`CREATE TABLE IF NOT EXISTS "${name}" (LIKE webhook_deliveries INCLUDING DEFAULTS)`));
  expect((await deliveryLogPartitions(db)).map((p) => p.name)).not.toContain(name);
  await purgeDeliveryLog(db, new Date(Date.now() - DELIVERY_LOG_RETENTION_MS));
  expect((await db.execute(sql`SELECT to_regclass(${name}) AS t`)).rows[0].t).toBeNull();
});

test('the purge waits at most PURGE_LOCK_WAIT_MS for the log\'s lock (statements queue behind a waiting detach): a busy log leaves the week for the next pass, which detaches and drops it', async () => {
  const db = h.deps.database.db;
  const name = 'webhook_deliveries_w20200113';
  await db.execute(sql.raw(`CREATE TABLE IF NOT EXISTS "${name}" PARTITION OF webhook_deliveries FOR VALUES FROM ('2020-01-13 00:00:00+00') TO ('2020-01-20 00:00:00+00')`));
  const reader = new Client({ connectionString: h.deps.config.databaseUrl });
  await reader.connect();
  try {
    // A transaction that read the log and is still open holds a lock the detach must wait for.
    await reader.query('BEGIN');
    await reader.query('SELECT 1 FROM webhook_deliveries LIMIT 1');
    const started = Date.now();
    const first = await purgeDeliveryLog(db, new Date(Date.now() - DELIVERY_LOG_RETENTION_MS));
    expect(first.busy).toBeGreaterThanOrEqual(1);
    // bounded by the lock wait (100 ms per busy week), not by the reader's transaction
    expect(Date.now() - started).toBeLessThan(first.busy * PURGE_LOCK_WAIT_MS + 2_000);
    expect((await deliveryLogPartitions(db)).map((p) => p.name)).toContain(name);
    await reader.query('ROLLBACK');
    const second = await purgeDeliveryLog(db, new Date(Date.now() - DELIVERY_LOG_RETENTION_MS));
    expect(second.busy).toBe(0);
    expect((await db.execute(sql`SELECT to_regclass(${name}) AS t`)).rows[0].t).toBeNull();
  } finally {
    await reader.end();
  }
});
