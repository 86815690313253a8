/**
 * The migrate path on a table that already holds messages (docs/operations.md "Migrations"):
 * migration 0004 neither rewrites `messages` nor builds its indexes in drizzle's transaction; the
 * online steps fill `search_vector` and build the indexes CONCURRENTLY, so writes go on meanwhile.
 * Migration 0010 leaves its index to an online step the same way.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { migrate } from 'drizzle-orm/node-postgres/migrator';
import { drizzle } from 'drizzle-orm/node-postgres';
import { concurrentIndex, MIGRATIONS_DIR, ONLINE_STEPS, runMigrations, runOnlineSteps } from '@teamchat/db';
import { testServerUrl } from '../../../test/support/env';

const created: string[] = [];
const clients: Client[] = [];

async function onServer(sql: string): Promise<void> {
  const admin = new Client({ connectionString: testServerUrl() });
  await admin.connect();
  try { await admin.query(sql); } finally { await admin.end(); }
}

async function freshDatabase(): Promise<string> {
  const name = `migrate_test_${randomBytes(4).toString('hex')}`;
  await onServer(`CREATE DATABASE "${name}"`);
  created.push(name);
  const url = new URL(testServerUrl());
  url.pathname = `/${name}`;
  return url.toString();
}

async function connect(url: string): Promise<Client> {
  const c = new Client({ connectionString: url });
  await c.connect();
  clients.push(c);
  return c;
}

/** Applies the migrations before 0004 only (a copy of the folder whose journal stops there). */
async function migrateBefore0004(url: string): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'migrations-'));
  fs.mkdirSync(path.join(dir, 'meta'));
  const journal = JSON.parse(fs.readFileSync(path.join(MIGRATIONS_DIR, 'meta', '_journal.json'), 'utf8')) as { entries: Array<{ idx: number; tag: string }> };
  journal.entries = journal.entries.filter((e) => e.idx < 4);
  fs.writeFileSync(path.join(dir, 'meta', '_journal.json'), JSON.stringify(journal));
  for (const e of journal.entries) fs.copyFileSync(path.join(MIGRATIONS_DIR, `${e.tag}.sql`), path.join(dir, `${e.tag}.sql`));
  const c = await connect(url);
  await migrate(drizzle(c), { migrationsFolder: dir });
  fs.rmSync(dir, { recursive: true });
}

async function seedMessages(c: Client, n: number): Promise<void> {
  await c.query(`INSERT INTO accounts (id, name, plan) VALUES ('acct_m', 'm', 'pro')`);
  await c.query(`INSERT INTO identities (id, account_id, kind, name) VALUES ('idn_m', 'acct_m', 'agent', 'm')`);
  await c.query(`INSERT INTO channels (id, account_id, kind, name, created_by_identity_id)
                 SELECT 'ch_m' || g, 'acct_m', 'channel', 'm-' || g, 'idn_m' FROM generate_series(1, 5) g`);
  await c.query(`INSERT INTO messages (channel_id, ts_micros, account_id, author_identity_id, text)
                 SELECT 'ch_m' || (1 + g % 5), 1700000000000000 + g, 'acct_m', 'idn_m', 'old message number ' || g
                   FROM generate_series(1, ${n}) g`);
}

const indexes = ['messages_account_ts_idx', 'messages_search_idx', 'messages_text_trgm_idx'];

async function validIndexes(c: Client): Promise<string[]> {
  const r = await c.query<{ name: string }>(`SELECT c.relname AS name FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
    WHERE c.relname = ANY($1) AND i.indisvalid ORDER BY 1`, [indexes]);
  return r.rows.map((x) => x.name);
}

afterAll(async () => {
  await Promise.all(clients.map((c) => c.end().catch(() => undefined)));
  for (const name of created) await onServer(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`).catch(() => undefined);
});

describe('migrations on a table that already holds messages', () => {
  test('0004 does not rewrite messages; the online steps fill search_vector for old rows and build the three indexes, valid', async () => {
    const url = await freshDatabase();
    await migrateBefore0004(url);
    const c = await connect(url);
    await seedMessages(c, 12_000); // more than two backfill batches
    const filenode = (await c.query(`SELECT pg_relation_filenode('messages') AS f`)).rows[0].f as string;
    const steps: string[] = [];
    await runMigrations(url, (id) => steps.push(id));

    // the same heap file: no table rewrite (a stored generated column would have made a new one)
    expect((await c.query(`SELECT pg_relation_filenode('messages') AS f`)).rows[0].f).toBe(filenode);
    expect(steps).toEqual(ONLINE_STEPS.map((s) => s.id));
    const unfilled = await c.query(`SELECT count(*)::int AS n FROM messages WHERE search_vector IS DISTINCT FROM to_tsvector('simple', text)`);
    expect(unfilled.rows[0].n).toBe(0);
    expect(await validIndexes(c)).toEqual(indexes);
    const found = await c.query(`SELECT count(*)::int AS n FROM messages WHERE search_vector @@ 'number'::tsquery`);
    expect(found.rows[0].n).toBe(12_000);

    // the trigger keeps new and edited rows
    await c.query(`INSERT INTO messages (channel_id, ts_micros, account_id, author_identity_id, text) VALUES ('ch_m1', 1, 'acct_m', 'idn_m', 'Brand NEW words')`);
    await c.query(`UPDATE messages SET text = 'edited wording' WHERE channel_id = 'ch_m2' AND ts_micros = 1700000000000001`);
    const kept = await c.query(`SELECT search_vector::text AS v FROM messages WHERE (channel_id, ts_micros) IN (('ch_m1', 1), ('ch_m2', 1700000000000001)) ORDER BY ts_micros`);
    expect(kept.rows.map((r) => r.v)).toEqual([`'brand':1 'new':2 'words':3`, `'edited':1 'wording':2`]);

    // a second run does nothing: every step is recorded as done
    const again: string[] = [];
    await runMigrations(url, (id) => again.push(id));
    expect(again).toEqual([]);
  });

  test('an index build goes on while posts are written: an INSERT answers while CREATE INDEX CONCURRENTLY waits for an open writer', async () => {
    const url = await freshDatabase();
    await runMigrations(url);
    const c = await connect(url);
    await seedMessages(c, 100);
    await c.query('DROP INDEX messages_text_trgm_idx');
    // A transaction that has written to messages and stays open: the build waits for it to end.
    const holder = await connect(url);
    await holder.query('BEGIN');
    await holder.query(`INSERT INTO messages (channel_id, ts_micros, account_id, author_identity_id, text) VALUES ('ch_m1', 2, 'acct_m', 'idn_m', 'held')`);
    const builder = await connect(url);
    const step = concurrentIndex('test:trgm', 'messages_text_trgm_idx', 'ON "messages" USING gin ("text" gin_trgm_ops)');
    const building = runOnlineSteps(builder, [step]);
    // the build is under way (waiting for the holder)
    for (let i = 0; i < 100; i++) {
      const r = await c.query(`SELECT count(*)::int AS n FROM pg_stat_progress_create_index WHERE datname = current_database()`);
      if (r.rows[0].n > 0) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    // A post meanwhile: a plain CREATE INDEX would hold it behind its SHARE lock until the end.
    const writer = await connect(url);
    await writer.query(`SET statement_timeout = '3s'`);
    await writer.query(`INSERT INTO messages (channel_id, ts_micros, account_id, author_identity_id, text) VALUES ('ch_m1', 3, 'acct_m', 'idn_m', 'written during the build')`);
    await holder.query('COMMIT');
    await building;
    expect(await validIndexes(c)).toEqual(indexes);
  });

  test('an index left invalid by an interrupted build is dropped and built again', async () => {
    const url = await freshDatabase();
    await runMigrations(url);
    const c = await connect(url);
    // what an interrupted CREATE INDEX CONCURRENTLY leaves: the index, marked invalid
    await c.query(`UPDATE pg_index SET indisvalid = false WHERE indexrelid = 'messages_search_idx'::regclass`);
    await c.query(`DELETE FROM drizzle.__online_steps WHERE id = '0004_files_and_search:messages_search_idx'`);
    expect(await validIndexes(c)).toEqual(['messages_account_ts_idx', 'messages_text_trgm_idx']);
    await runMigrations(url);
    expect(await validIndexes(c)).toEqual(indexes);
  });
});

describe('migrations 0010 and 0012: the failing check\'s indexes', () => {
  test.each([
    ['webhook_endpoints', 'webhook_endpoints_failing_idx'],
    ['mirrors', 'mirrors_failing_idx'],
  ])('its online step builds the index of %s, valid, and the check\'s read can walk it in order', async (table, index) => {
    const url = await freshDatabase();
    await runMigrations(url);
    const c = await connect(url);
    const r = await c.query<{ valid: boolean; def: string }>(`SELECT i.indisvalid AS valid, pg_get_indexdef(i.indexrelid) AS def
      FROM pg_index i JOIN pg_class x ON x.oid = i.indexrelid WHERE x.relname = $1`, [index]);
    expect(r.rows).toHaveLength(1);
    expect(r.rows[0].valid).toBe(true);
    expect(r.rows[0].def).toContain('WHERE (enabled AND (deleted_at IS NULL) AND (failing_since IS NOT NULL))');
    // The predicate of failingCandidates (packages/core, health.ts) implies the index's: with
    // scans forced away, the plan is the index, and its order is the read's (no sort).
    await c.query('SET enable_seqscan = off');
    const plan = await c.query<{ 'QUERY PLAN': string }>(`EXPLAIN SELECT id FROM ${table}
      WHERE enabled = true AND deleted_at IS NULL AND failing_since <= now() - interval '24 hours' ORDER BY failing_since, id LIMIT 1000`);
    const text = plan.rows.map((row) => row['QUERY PLAN']).join('\n');
    expect(text).toContain(index);
    expect(text).not.toContain('Sort');
  });
});
