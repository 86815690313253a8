import type { Client } from 'pg';

/**
 * Online steps: the schema work that must not run inside drizzle's migration transaction because
 * it would block writes on a large table for its whole length (docs/operations.md "Migrations").
 * They run after drizzle's migrations, in order, each outside any transaction, and each is
 * recorded once finished (`drizzle.__online_steps`) so a later run skips it. Every step may be
 * interrupted and run again: an index is built `CREATE INDEX CONCURRENTLY IF NOT EXISTS` (an
 * invalid one left by an interrupted build is dropped first), a backfill resumes where rows
 * are still unfilled.
 *
 * Rule for new steps: a step may rely only on migrations up to the one it belongs to, and no
 * later drizzle migration may rely on a step (it runs before the steps do).
 */
export interface OnlineStep {
  /** unique and stable: `<migration tag>:<what>` (recorded once done) */
  id: string;
  run(client: Client): Promise<void>;
}

/** Rows one backfill statement updates: each batch is its own short transaction. */
export const BACKFILL_BATCH = 5000;

/**
 * `CREATE INDEX CONCURRENTLY` of `name` (`definition`: the statement without `CREATE INDEX
 * CONCURRENTLY IF NOT EXISTS "name"`). Writes go on while it builds; it waits for transactions
 * already touching the table to end.
 */
export function concurrentIndex(id: string, name: string, definition: string): OnlineStep {
  return {
    id,
    async run(client) {
      const found = await client.query<{ valid: boolean }>(
        `SELECT i.indisvalid AS valid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
          WHERE c.relname = $1 AND c.relnamespace = 'public'::regnamespace`, [name]);
      if (found.rows[0] && !found.rows[0].valid) await client.query(`DROP INDEX CONCURRENTLY IF EXISTS "${name}"`);
      await client.query(`CREATE INDEX CONCURRENTLY IF NOT EXISTS "${name}" ${definition}`);
    },
  };
}

/**
 * Fills `messages.search_vector` for rows written before its trigger existed, in primary-key
 * order, BACKFILL_BATCH rows per statement (row locks for one batch at a time; posts and edits go
 * on, the trigger keeps the rows they write). Skipped where the column is a stored generated
 * column (a database that applied migration 0004 before it was made online: PostgreSQL keeps it).
 */
export const searchVectorBackfill: OnlineStep = {
  id: '0004_files_and_search:search_vector_backfill',
  async run(client) {
    const column = await client.query<{ generated: string }>(
      `SELECT attgenerated AS generated FROM pg_attribute
        WHERE attrelid = 'public.messages'::regclass AND attname = 'search_vector' AND NOT attisdropped`);
    if (column.rows[0]?.generated === 's') return;
    let after: string[] = [];
    for (;;) {
      const keyset = after.length ? 'WHERE (channel_id, ts_micros) > ($1, $2::bigint)' : '';
      const last = await client.query<{ channel_id: string; ts_micros: string }>(`
        WITH batch AS (SELECT channel_id, ts_micros FROM messages ${keyset} ORDER BY channel_id, ts_micros LIMIT ${BACKFILL_BATCH}),
             filled AS (UPDATE messages m SET search_vector = to_tsvector('simple'::regconfig, m.text)
                          FROM batch b WHERE m.channel_id = b.channel_id AND m.ts_micros = b.ts_micros AND m.search_vector IS NULL)
        SELECT channel_id, ts_micros::text AS ts_micros FROM batch ORDER BY channel_id DESC, ts_micros DESC LIMIT 1`, after);
      if (last.rows.length === 0) return;
      after = [last.rows[0].channel_id, last.rows[0].ts_micros];
    }
  },
};

/** Every online step, in the order they run. */
export const ONLINE_STEPS: readonly OnlineStep[] = [
  searchVectorBackfill,
  concurrentIndex('0004_files_and_search:messages_account_ts_idx', 'messages_account_ts_idx',
    'ON "messages" USING btree ("account_id","ts_micros","channel_id")'),
  concurrentIndex('0004_files_and_search:messages_search_idx', 'messages_search_idx',
    'ON "messages" USING gin ("search_vector")'),
  concurrentIndex('0004_files_and_search:messages_text_trgm_idx', 'messages_text_trgm_idx',
    'ON "messages" USING gin ("text" gin_trgm_ops)'),
  concurrentIndex('0010_failing_check_index:webhook_endpoints_failing_idx', 'webhook_endpoints_failing_idx',
    'ON "webhook_endpoints" USING btree ("failing_since","id") WHERE enabled AND deleted_at IS NULL AND failing_since IS NOT NULL'),
  concurrentIndex('0012_mirror_failing_index:mirrors_failing_idx', 'mirrors_failing_idx',
    'ON "mirrors" USING btree ("failing_since","id") WHERE enabled AND deleted_at IS NULL AND failing_since IS NOT NULL'),
];

/**
 * Runs the online steps not yet recorded as done (`client` outside any transaction; the caller
 * holds the migration lock). `onStep` hears each step run and how long it took (ms).
 */
export async function runOnlineSteps(
  client: Client,
  steps: readonly OnlineStep[] = ONLINE_STEPS,
  onStep: (id: string, ms: number) => void = () => undefined,
): Promise<void> {
  await client.query(`CREATE SCHEMA IF NOT EXISTS drizzle;
    CREATE TABLE IF NOT EXISTS drizzle.__online_steps (id text PRIMARY KEY, finished_at timestamptz NOT NULL DEFAULT now())`);
  const done = new Set((await client.query<{ id: string }>('SELECT id FROM drizzle.__online_steps')).rows.map((r) => r.id));
  for (const step of steps) {
    if (done.has(step.id)) continue;
    const started = Date.now();
    await step.run(client);
    await client.query('INSERT INTO drizzle.__online_steps (id) VALUES ($1) ON CONFLICT DO NOTHING', [step.id]);
    onStep(step.id, Date.now() - started);
  }
}
