/**
 * `npm run bench -- search`: message search over 1,000,000 messages in 200 channels, seeded by
 * SQL, next to a primary-key read of one message in the same run.
 *
 * The seed inserts the messages without the three search indexes (the trigger of migration 0004
 * fills `search_vector` as each row is written), then builds them with the online steps of the
 * migrate runner (CREATE INDEX CONCURRENTLY), each timed: what they cost on a table this size.
 * BENCH_SEARCH_BACKFILL=1 inserts without `search_vector` and times the online backfill too
 * (it rewrites every row in batches: the heap doubles until vacuumed and loses its time order).
 *
 * The searcher is a member of all 200 channels (the widest scope). Words: `w0`…`w4999`, skewed
 * (power 3) so a few are very common; `the` in ~50 % of messages (the most common word);
 * `zebracorn` in 20 messages (a selective word). Each query runs BENCH_SEARCH_RUNS times (default
 * 200) one after another, through the search use case (`searchMessages`, page of 50).
 * BENCH_SEARCH_MESSAGES changes the corpus size (default 1,000,000).
 */
import { Client } from 'pg';
import { performance } from 'node:perf_hooks';
import { PgDialect } from 'drizzle-orm/pg-core';
import { arrayLiteral, searchMessages, searchStatement, type SearchSort } from '@teamchat/core';
import { createDatabase, ONLINE_STEPS, searchVectorBackfill, sql } from '@teamchat/db';
import type { BenchContext, BenchResult, Figure } from './run';

const MESSAGES = Number(process.env.BENCH_SEARCH_MESSAGES ?? 1_000_000);
const CHANNELS = 200;
const RUNS = Number(process.env.BENCH_SEARCH_RUNS ?? 200);
const ACCOUNT = 'acct_searchbench';
const IDENTITY = 'idn_searchbench';

async function timed(c: Client, sql: string): Promise<number> {
  const t = performance.now();
  await c.query(sql);
  return Math.round(performance.now() - t);
}

export async function seed(c: Client): Promise<Record<string, number>> {
  await c.query(`INSERT INTO accounts (id, name, plan) VALUES ('${ACCOUNT}', 'search bench', 'scale')`);
  await c.query(`INSERT INTO identities (id, account_id, kind, name) VALUES ('${IDENTITY}', '${ACCOUNT}', 'agent', 'bench')`);
  await c.query(`INSERT INTO channels (id, account_id, kind, name, created_by_identity_id)
                 SELECT 'ch_bench' || g, '${ACCOUNT}', 'channel', 'bench-' || g, '${IDENTITY}' FROM generate_series(1, ${CHANNELS}) g`);
  await c.query(`INSERT INTO channel_members (channel_id, identity_id, account_id)
                 SELECT 'ch_bench' || g, '${IDENTITY}', '${ACCOUNT}' FROM generate_series(1, ${CHANNELS}) g`);
  const backfill = process.env.BENCH_SEARCH_BACKFILL === '1';
  await c.query('DROP INDEX messages_search_idx; DROP INDEX messages_text_trgm_idx; DROP INDEX messages_account_ts_idx');
  if (backfill) await c.query('DROP TRIGGER messages_search_vector ON messages');
  const insert = await timed(c, `
    INSERT INTO messages (channel_id, ts_micros, account_id, author_identity_id, text)
    SELECT 'ch_bench' || (1 + g % ${CHANNELS}), 1700000000000000 + g * 1000, '${ACCOUNT}', '${IDENTITY}',
           (SELECT string_agg(CASE WHEN w = 1 AND random() < 0.5 THEN 'the' ELSE 'w' || floor(5000 * power(random(), 3))::int END, ' ')
              FROM generate_series(1, 6 + (g % 15) + 0 * g) w)
      FROM generate_series(1, ${MESSAGES}) g`);
  const costs: Record<string, number> = { insert };
  if (backfill) {
    await c.query(`CREATE TRIGGER messages_search_vector BEFORE INSERT OR UPDATE OF text ON messages FOR EACH ROW EXECUTE FUNCTION messages_search_vector()`);
    const t = performance.now();
    await searchVectorBackfill.run(c);
    costs.backfill = Math.round(performance.now() - t);
  }
  await c.query(`UPDATE messages SET text = text || ' zebracorn' WHERE account_id = '${ACCOUNT}' AND ts_micros % ${Math.floor(MESSAGES / 20) * 1000} = 0`);
  for (const step of ONLINE_STEPS.filter((x) => x.id.endsWith('_idx'))) {
    const t = performance.now();
    await step.run(c);
    costs[step.id.split(':')[1]] = Math.round(performance.now() - t);
  }
  await c.query('VACUUM ANALYZE messages');
  return costs;
}

function pct(sorted: number[], p: number): number {
  return Number(sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)].toFixed(1));
}

export default async function searchBench(ctx: BenchContext): Promise<BenchResult> {
  const c = new Client({ connectionString: ctx.databaseUrl });
  await c.connect();
  const database = createDatabase(ctx.databaseUrl, { max: 2 });
  try {
    const costs = await seed(c);
    const size = (await c.query(`SELECT pg_size_pretty(pg_relation_size('messages')) AS heap,
      pg_size_pretty(pg_relation_size('messages_search_idx')) AS gin, pg_size_pretty(pg_relation_size('messages_text_trgm_idx')) AS trgm`)).rows[0];
    const counts = (await c.query(`SELECT count(*) FILTER (WHERE search_vector @@ 'the'::tsquery) AS the,
      count(*) FILTER (WHERE search_vector @@ 'zebracorn'::tsquery) AS zebracorn FROM messages`)).rows[0];
    const pk = (await c.query(`SELECT channel_id, ts_micros::text FROM messages ORDER BY random() LIMIT 1`)).rows[0];

    const base = { accountId: ACCOUNT, identityId: IDENTITY, limit: 50, cursor: null };
    const cases: Array<{ id: string; name: string; run: () => Promise<unknown>; target?: number }> = [
      { id: 'pk', name: 'primary-key read of one message', run: () => database.pool.query('SELECT channel_id, ts_micros, text FROM messages WHERE channel_id = $1 AND ts_micros = $2', [pk.channel_id, pk.ts_micros]) },
      { id: 'selective', name: 'search "zebracorn" (selective), relevance', target: 50, run: () => searchMessages(database.db, { ...base, query: 'zebracorn', sort: 'relevance' }) },
      { id: 'common', name: 'search "the" (most common word), relevance', target: 200, run: () => searchMessages(database.db, { ...base, query: 'the', sort: 'relevance' }) },
      { id: 'common_newest', name: 'search "the", newest', run: () => searchMessages(database.db, { ...base, query: 'the', sort: 'newest' as SearchSort }) },
      { id: 'substring', name: 'search "ebraco" (part of a word: trigram), relevance', run: () => searchMessages(database.db, { ...base, query: 'ebraco', sort: 'relevance' }) },
      { id: 'tenth', name: 'search "w3" (in 10 % of messages), relevance', run: () => searchMessages(database.db, { ...base, query: 'w3', sort: 'relevance' }) },
      { id: 'rare', name: 'search "w2000" (in 0.15 % of messages), newest', run: () => searchMessages(database.db, { ...base, query: 'w2000', sort: 'newest' }) },
    ];
    const rows: Array<Record<string, string | number>> = [];
    const figures: Figure[] = [];
    const measured: Record<string, { p50: number; p99: number }> = {};
    for (const k of cases) {
      for (let i = 0; i < 5; i++) await k.run();
      const ms: number[] = [];
      for (let i = 0; i < RUNS; i++) {
        const t = performance.now();
        await k.run();
        ms.push(performance.now() - t);
      }
      ms.sort((a, b) => a - b);
      measured[k.id] = { p50: pct(ms, 50), p99: pct(ms, 99) };
      rows.push({ query: k.name, runs: RUNS, 'p50 ms': measured[k.id].p50, 'p99 ms': measured[k.id].p99, 'max ms': Number(ms[ms.length - 1].toFixed(1)) });
    }
    for (const k of cases.filter((x) => x.id !== 'pk')) {
      figures.push({
        id: `search_${k.id}_p99_ms`, figure: `Search: ${k.name}: p99`, value: measured[k.id].p99, unit: 'ms',
        baseline: 'primary-key read of one message (p99)', baselineValue: measured.pk.p99,
        ...(k.target !== undefined ? { target: `≤ ${k.target} ms`, met: measured[k.id].p99 <= k.target } : {}),
      });
    }
    // EXPLAIN of the statement searchMessages runs, with the planner settings it sets.
    const channels = arrayLiteral((await c.query(`SELECT channel_id FROM channel_members WHERE identity_id = '${IDENTITY}'`)).rows.map((r) => r.channel_id as string));
    const explain = async (query: string, sort: SearchSort, plan: 'window' | 'few' | 'walk' | 'sorted') => {
      const q = new PgDialect().sqlToQuery(searchStatement({ ...base, channels, query, sort }, plan));
      await c.query('BEGIN');
      await c.query(plan === 'few' || plan === 'sorted' ? 'SET LOCAL enable_seqscan = off; SET LOCAL enable_indexscan = off' : 'SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off');
      const out = await c.query(`EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) ${q.sql}`, q.params);
      await c.query('COMMIT');
      // the member channels' array (200 ids) abridged
      return out.rows.map((r) => (r['QUERY PLAN'] as string).replace(/'\{"?ch_bench[^}]*\}'/g, "'{…200 channels…}'"));
    };
    // The planner's estimate searchMessages reads to choose its first plan (FEW_FIRST_ESTIMATE).
    const estimate = async (query: string) => {
      const q = new PgDialect().sqlToQuery(sql`EXPLAIN SELECT 1 FROM messages m WHERE (m.search_vector @@ websearch_to_tsquery('simple', ${query}) OR m.text ~* ${query})`);
      return (await c.query(q.sql, q.params)).rows[0]['QUERY PLAN'] as string;
    };
    const notes = [
      `corpus: ${MESSAGES} messages in ${CHANNELS} channels; "the" in ${counts.the}, "zebracorn" in ${counts.zebracorn}; heap ${size.heap}, search_vector GIN ${size.gin}, trigram GIN ${size.trgm}`,
      `seed and online steps on this table, ms: ${Object.entries(costs).map(([k, v]) => `${k} ${v}`).join('; ')}`,
      ...(await Promise.all(['zebracorn', 'ebraco', 'w2000', 'w3', 'the'].map(async (w) => `estimate, "${w}": ${await estimate(w)}`))),
      'plan, "zebracorn" (relevance, few):', ...(await explain('zebracorn', 'relevance', 'few')),
      'plan, "the" (relevance, window):', ...(await explain('the', 'relevance', 'window')),
      'plan, "w3" (relevance, window: too few matches, then the walk):', ...(await explain('w3', 'relevance', 'window')),
      'plan, "w3" (relevance, walk):', ...(await explain('w3', 'relevance', 'walk')),
      'plan, "w2000" (relevance, few first by the estimate: stops at 1,001 matches):', ...(await explain('w2000', 'relevance', 'few')),
      'plan, "w2000" (relevance, sorted, after few and window):', ...(await explain('w2000', 'relevance', 'sorted')),
    ];
    return { title: `Search over ${MESSAGES} messages (${RUNS} sequential runs each, page of 50)`, rows, figures, notes };
  } finally {
    await database.close();
    await c.end();
  }
}
