/**
 * The maintenance pass renews a log partition's statistics once it changed much
 * (analyzeChangedLogPartitions, docs/performance.md "Isolation between accounts"): a backlog's
 * fan-out must not leave the engine's lookups planned on statistics that describe the
 * partition empty. Its own database: the rule counts every row of the partition.
 */
import { analyzeChangedLogPartitions, ANALYZE_AFTER_ROWS } from '@teamchat/core';
import { createDatabase, sql, type Database } from '@teamchat/db';
import { createMigratedDatabase, dropDatabase } from '../../../test/support/databases';
import { eventually } from '../../../test/support/webhooks';

let made: { name: string; url: string };
let database: Database;

beforeAll(async () => {
  made = await createMigratedDatabase('log_stats');
  database = createDatabase(made.url, { max: 2 });
});

afterAll(async () => {
  await database.close();
  await dropDatabase(made.name);
});

test('a partition that took more rows than the rule allows since its last ANALYZE is analyzed by the next pass, once', async () => {
  const db = database.db;
  await db.transaction(async (tx) => {
    // The rows only have to exist for the statistics: foreign keys are not checked here.
    await tx.execute(sql`SET LOCAL session_replication_role = replica`);
    await tx.execute(sql`
      INSERT INTO webhook_deliveries (id, account_id, endpoint_id, event_id, event_type, body_id, kind, chain_id, attempt, status, event_created_at)
      SELECT 'dlv_stats' || g, 'acct_stats', 'wh_stats', 'evt_stats' || g, 'message.posted', 'whb_stats', 'event', 'dlv_stats' || g, 1, 'pending', now()
        FROM generate_series(1, ${ANALYZE_AFTER_ROWS + 500}) g`);
  });
  const current = (await db.execute<{ name: string }>(sql`SELECT tableoid::regclass::text AS name FROM webhook_deliveries WHERE id = 'dlv_stats1'`)).rows[0].name;
  const analyzedAt = async () => (await db.execute<{ at: Date | null }>(sql`SELECT greatest(last_analyze, last_autoanalyze) AS at FROM pg_stat_user_tables WHERE relname = ${current}`)).rows[0]?.at ?? null;
  let analyzed: string[] = [];
  // The inserting backend reports its counts to the statistics system within about a second.
  await eventually(async () => (analyzed = await analyzeChangedLogPartitions(db)).length > 0, 15_000, 'the partition analyzed');
  expect(analyzed).toEqual([current]);
  expect(await analyzedAt()).not.toBeNull();
  expect(await analyzeChangedLogPartitions(db)).toEqual([]);
});
