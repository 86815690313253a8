import { Client } from 'pg';
import { inFlightKey } from '@teamchat/core';
import { warmUpDeliveries } from '../src/warm-up-deliveries';
import { createMigratedDatabase, dropDatabase } from '../../../test/support/databases';
import type { Harness } from '../../../test/support/harness';
import { makeChannel, messagingAccount, post } from '../../../test/support/messaging';
import { startWebhookHarness } from '../../../test/support/webhooks';

/**
 * The worker's warm-up deliveries (warm-up-deliveries.ts, docs/operations.md "Readiness"): real
 * posts, fan-out, dispatcher, pipeline and close on real rows, in one transaction rolled back.
 * Nothing is committed, no attempt is counted, no in-flight slot is left in Redis, and another
 * account's unrelayed event is neither read nor relayed. A database of its own, so whole tables
 * can be counted.
 */
let db: { name: string; url: string };
beforeAll(async () => {
  db = await createMigratedDatabase('teamchat_whwarmdel');
});
afterAll(async () => {
  await dropDatabase(db.name);
});

const TABLES = ['users', 'accounts', 'channels', 'messages', 'events', 'webhook_endpoints', 'webhook_bodies', 'webhook_deliveries', 'webhook_health_deltas', 'audit_records'];

async function counts(h: Harness) {
  const out: Record<string, number> = {};
  for (const t of TABLES) out[t] = Number((await h.deps.database.pool.query<{ n: string }>(`SELECT count(*) AS n FROM ${t}`)).rows[0].n);
  return out;
}

/** Every Redis key of the harness's own prefix, sorted. */
const redisKeys = async (h: Harness) => (await h.deps.redis.keys(`${h.deps.config.redisPrefix}:*`)).sort();

const attemptsCounted = async (h: Harness) => (await h.deps.metrics.deliveriesTotal.get()).values.reduce((s, v) => s + v.value, 0);

// As in production, no host is exempt from the guard; and with the loopback names exempt
// (development, tests), the sends still go to the warm-up's receiver only.
test.each([[[] as string[]], [['localhost', '127.0.0.1']]])('allowed hosts %j: every delivery made and recorded delivered on real rows, then nothing of it left anywhere', async (allowed) => {
  const h = await startWebhookHarness({ databaseUrl: db.url, webhookAllowedHosts: allowed });
  try {
    // Another account's event, committed and waiting for the relay (no engine runs here).
    const other = await messagingAccount(h);
    await post(other.ownerApi, await makeChannel(other.ownerApi), { text: 'waiting' });
    const unrelayed = async () => Number((await h.deps.database.pool.query<{ n: string }>('SELECT count(*) AS n FROM events WHERE relayed_at IS NULL AND account_id = $1', [other.accountId])).rows[0].n);
    const waiting = await unrelayed();
    expect(waiting).toBeGreaterThan(0);

    const before = await counts(h);
    const counted = await attemptsCounted(h);
    const keysBefore = await redisKeys(h);
    expect(await warmUpDeliveries(h.deps, 30)).toBe(30);
    expect(await counts(h)).toEqual(before);
    expect(await attemptsCounted(h)).toBe(counted);
    expect(await unrelayed()).toBe(waiting);
    // The warm-up's slots were given back: no account's lease set is left, and its account's
    // demand hash (fair share between processes) expires within a second, as every ask's does.
    const keys = await h.deps.redis.keys(inFlightKey(h.deps.config, '*').replace(/\{?\*\}?$/, '*'));
    expect(keys.filter((k) => !k.endsWith(':demand'))).toEqual([]);
    for (const k of keys) expect(await h.deps.redis.pttl(k)).toBeLessThanOrEqual(1000);
    // Nothing else of it is kept in Redis either: no call unit charged (the limits are on in this
    // harness, off for the warm-up), no counter or key of the account that never existed.
    expect((await redisKeys(h)).filter((k) => !k.endsWith(':demand'))).toEqual(keysBefore);
  } finally {
    await h.close();
  }
});

test('a table held by another transaction fails the step within seconds (the worker goes on to be ready), leaving nothing', async () => {
  const h = await startWebhookHarness({ databaseUrl: db.url });
  const locker = new Client({ connectionString: db.url });
  await locker.connect();
  try {
    const before = await counts(h);
    // The fan-out's write inserts the stored bodies: with the table held, it waits for its lock.
    await locker.query('BEGIN');
    await locker.query('LOCK TABLE webhook_bodies IN SHARE MODE');
    const started = Date.now();
    await expect(warmUpDeliveries(h.deps, 10)).rejects.toThrow(/lock timeout/);
    expect(Date.now() - started).toBeLessThan(10_000);
    await locker.query('COMMIT');
    expect(await counts(h)).toEqual(before);
  } finally {
    await locker.end().catch(() => undefined);
    await h.close();
  }
});
