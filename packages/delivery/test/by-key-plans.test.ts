/**
 * The by-key statements keep one generic plan each on the worker's (and the API's) by-key pool
 * (DatabaseOptions.byKeyPool), so each must keep the rule of test/support/by-key-plans.ts (every
 * table reached by its key, checked on an empty database: a partial index of open rows or of
 * unrelayed events walked there would be a backlog's length walked later). Also: which pool each
 * statement runs on, and which sessions commit asynchronously.
 */
import { BY_KEY_SESSION, createDatabase, definedStatements, runStatement, statement, type Database } from '@teamchat/db';
import { createDeps, loadConfig, randomToken, waitReady } from '@teamchat/core';
import { byKeyPlanProblems } from '../../../test/support/by-key-plans';
import { createMigratedDatabase, dropDatabase } from '../../../test/support/databases';
import { TEST_REDIS_URL } from '../../../test/support/env';
import '../src/statements';

let made: { name: string; url: string };
let database: Database;

beforeAll(async () => {
  made = await createMigratedDatabase('by_key_plans');
  database = createDatabase(made.url, { max: 2, customPlans: true, byKeyPool: true, application_name: 'by_key_test' });
});

afterAll(async () => {
  await database.close();
  await dropDatabase(made.name);
});

/** The scan of the partial index of unrelayed events is UNRELAYED_READ's way in, by design: in seq order from the start. */
const DESIGNED_SCANS: Record<string, string[]> = { webhook_unrelayed_read: ['events_unrelayed_idx'] };

test('every by-key statement plans, on an empty database, as index conditions on each index\'s key: no table scanned, no index walked', async () => {
  const byKey = definedStatements().filter((st) => st.byKey);
  expect(byKey.map((st) => st.name).sort()).toEqual([
    'messages_page', // the API's page read (loaded with @teamchat/core)
    'webhook_claim_and_read', 'webhook_close_delivered_claims', 'webhook_fanout_read_many', 'webhook_fanout_write', 'webhook_fanout_write_mirrored',
    'webhook_release_claims', 'webhook_unrelayed_read',
  ]);
  const client = await database.byKeyPool!.connect();
  try {
    expect(await byKeyPlanProblems(client, byKey, DESIGNED_SCANS)).toEqual([]);
  } finally {
    client.release();
  }
});

test('a by-key statement runs on the by-key pool (one generic plan, no scans of tables); others, and any inside a transaction, on the main pool', async () => {
  const settingsProbe = statement<{ mode: string; seqscan: string }>('by_key_probe_settings', "SELECT current_setting('plan_cache_mode') AS mode, current_setting('enable_seqscan') AS seqscan", { byKey: true });
  const plainProbe = statement<{ mode: string; seqscan: string }>('plain_probe_settings', "SELECT current_setting('plan_cache_mode') AS mode, current_setting('enable_seqscan') AS seqscan");
  expect(await runStatement(database.db, settingsProbe, [])).toEqual([{ mode: 'force_generic_plan', seqscan: 'off' }]);
  expect(await runStatement(database.db, plainProbe, [])).toEqual([{ mode: 'force_custom_plan', seqscan: 'on' }]);
  await database.db.transaction(async (tx) => {
    expect(await runStatement(tx, settingsProbe, [])).toEqual([{ mode: 'force_custom_plan', seqscan: 'on' }]);
  });
  expect(BY_KEY_SESSION).toContain('force_generic_plan');
});

test('behind PgBouncer in transaction mode there is no by-key pool: by-key statements run on the one pool', async () => {
  const pooled = createDatabase(made.url, { max: 1, customPlans: true, byKeyPool: true, poolMode: 'transaction' });
  try {
    expect(pooled.byKeyPool).toBeNull();
    const probe = statement<{ mode: string }>('by_key_probe_pooled', "SELECT current_setting('plan_cache_mode') AS mode", { byKey: true });
    expect(await runStatement(pooled.db, probe, [])).toEqual([{ mode: 'auto' }]);
  } finally {
    await pooled.close();
  }
});

/**
 * The worker's by-key sessions commit asynchronously (DatabaseOptions.byKeyAsyncCommit), which is
 * right only for writes that a PostgreSQL crash may lose and the engine does again: the fan-out's
 * write (its events stay unrelayed and fan out anew), claims (they lapse anyway), quick closes
 * (the row is sent again, at least once) and claims given back (docs/webhooks.md "Crash
 * safety"). A new by-key statement that writes fails here until it is judged the same way and
 * added, or moved off the by-key pool.
 */
const WRITES_A_CRASH_MAY_LOSE = ['webhook_claim_and_read', 'webhook_close_delivered_claims', 'webhook_fanout_write', 'webhook_fanout_write_mirrored', 'webhook_release_claims'];

test('every by-key statement that writes is one a PostgreSQL crash may lose and the engine does again', () => {
  const writes = definedStatements().filter((st) => st.byKey && /\b(INSERT|UPDATE|DELETE|MERGE)\b/i.test(st.text)).map((st) => st.name).sort();
  expect(writes).toEqual(WRITES_A_CRASH_MAY_LOSE);
});

test('byKeyAsyncCommit: only the by-key sessions commit asynchronously; the main pool and its transactions wait for the flush', async () => {
  const worker = createDatabase(made.url, { max: 1, customPlans: true, byKeyPool: true, byKeyAsyncCommit: true });
  try {
    const probe = statement<{ sync: string }>('by_key_probe_commit', "SELECT current_setting('synchronous_commit') AS sync", { byKey: true });
    expect(await runStatement(worker.db, probe, [])).toEqual([{ sync: 'off' }]);
    expect((await worker.pool.query("SELECT current_setting('synchronous_commit') AS sync")).rows).toEqual([{ sync: 'on' }]);
    await worker.db.transaction(async (tx) => {
      expect(await runStatement(tx, probe, [])).toEqual([{ sync: 'on' }]);
    });
    expect(await runStatement(database.db, probe, [])).toEqual([{ sync: 'on' }]); // byKeyPool without byKeyAsyncCommit
  } finally {
    await worker.close();
  }
});

test("the worker's deps commit its by-key writes asynchronously; the API's do not", async () => {
  const config = loadConfig({ NODE_ENV: 'test', DATABASE_URL: made.url, REDIS_URL: TEST_REDIS_URL, LOG_LEVEL: 'silent' }, { secretsKey: 'ab'.repeat(32), redisPrefix: `test-${randomToken(8)}` });
  const commitOf = async (service: string) => {
    const deps = createDeps(config, service, { poolSize: 1 });
    try {
      // Both Redis connections ready before close: one closed during its ready check emits an
      // unhandled error.
      await waitReady(deps.redis);
      await deps.jobQueue.queue.waitUntilReady();
      return (await deps.database.byKeyPool!.query("SELECT current_setting('synchronous_commit') AS sync")).rows[0].sync as string;
    } finally {
      await deps.close();
    }
  };
  expect(await commitOf('worker')).toBe('off');
  expect(await commitOf('api')).toBe('on');
});
