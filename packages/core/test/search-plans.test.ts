/**
 * searchMessages answers the same whichever of its plans it takes (docs/performance.md "Search"):
 * a corpus of 25,000 messages whose words send it down each path (few first by the planner's
 * estimate, the window, the walk, the few plan after the window, the sorted plan), each answer
 * compared with the rule computed by brute force (docs/api.md "Search": newest, or the newest
 * 1,000 matches ranked by ts_rank_cd, ties newest), scoped to the searcher's channels.
 */
import { randomBytes } from 'node:crypto';
import { createDatabase, sql, type Database } from '@teamchat/db';
import { RELEVANCE_CANDIDATES, searchMessages, type SearchSort } from '@teamchat/core';
import { testDatabaseUrl } from '../../../test/support/env';

const N = 25_000;
let database: Database;
const ACCOUNT = `acct_plans${randomBytes(4).toString('hex')}`;
const ME = `idn_${ACCOUNT}`;
const CH = (i: number) => `ch_${ACCOUNT}_${i}`;

beforeAll(async () => {
  database = createDatabase(testDatabaseUrl(), { max: 2 });
  const db = database.db;
  await db.execute(sql.raw(`INSERT INTO accounts (id, name, plan) VALUES ('${ACCOUNT}', 'plans', 'pro')`));
  await db.execute(sql.raw(`INSERT INTO identities (id, account_id, kind, name) VALUES ('${ME}', '${ACCOUNT}', 'agent', 'me')`));
  await db.execute(sql.raw(`INSERT INTO channels (id, account_id, kind, name, created_by_identity_id)
    SELECT 'ch_${ACCOUNT}_' || g, '${ACCOUNT}', 'channel', 'plans-' || g, '${ME}' FROM generate_series(1, 5) g`));
  // member of channels 1-4, not 5: its messages are never found
  await db.execute(sql.raw(`INSERT INTO channel_members (channel_id, identity_id, account_id)
    SELECT 'ch_${ACCOUNT}_' || g, '${ME}', '${ACCOUNT}' FROM generate_series(1, 4) g`));
  // g = 1 is the oldest, N the newest. Words:
  //   common: 60 % of all (estimate over 10,000: the window answers)
  //   quarter: 22 % (estimate under 10,000: few first, more than 1,000 matches, then the window, then walk)
  //   stale: every other message among the oldest 20,000, none among the newest (the window finds
  //          none: few, then sorted)
  //   thin: every message among the oldest 20,000, 1 in 12 among the newest (estimate over 10,000,
  //         the window finds some: the walk without the few plan)
  //   rare: 7 messages (few first, all ranked); `are` finds them as parts of words (trigram index)
  await db.execute(sql.raw(`INSERT INTO messages (channel_id, ts_micros, account_id, author_identity_id, text)
    SELECT 'ch_${ACCOUNT}_' || (1 + g % 5), 1800000000000000 + g * 1000, '${ACCOUNT}', '${ME}',
           concat_ws(' ', 'm' || g,
             CASE WHEN g % 5 < 3 THEN 'common' END, CASE WHEN g % 9 < 2 THEN 'quarter' END,
             CASE WHEN g <= 20000 AND g % 2 = 0 THEN 'stale' END,
             CASE WHEN g <= 20000 OR g % 12 = 0 THEN 'thin' END,
             CASE WHEN g % 3571 = 0 THEN 'rare rare' || (g % 2) END,
             CASE WHEN g % 7 = 0 THEN 'common common' END)
      FROM generate_series(1, ${N}) g`));
  await db.execute(sql`ANALYZE messages`);
}, 120_000);

afterAll(async () => {
  await database.db.execute(sql.raw(`DELETE FROM messages WHERE account_id = '${ACCOUNT}'`));
  await database.close();
});

/** The rule, by brute force: every match in scope, ordered as the sort says. */
async function expected(query: string, sort: SearchSort, limit: number): Promise<string[]> {
  const match = `(search_vector @@ websearch_to_tsquery('simple', '${query}') OR text ~* '${query}')`;
  const scope = `account_id = '${ACCOUNT}' AND channel_id <> 'ch_${ACCOUNT}_5' AND ${match}`;
  const q = sort === 'newest'
    ? `SELECT text FROM messages WHERE ${scope} ORDER BY ts_micros DESC, channel_id DESC LIMIT ${limit}`
    : `SELECT text FROM (SELECT text, ts_micros, channel_id, ts_rank_cd(search_vector, websearch_to_tsquery('simple', '${query}')) AS rank
         FROM messages WHERE ${scope} ORDER BY ts_micros DESC, channel_id DESC LIMIT ${RELEVANCE_CANDIDATES}) c
        ORDER BY rank DESC, ts_micros DESC, channel_id DESC LIMIT ${limit}`;
  return (await database.db.execute<{ text: string }>(sql.raw(q))).rows.map((r) => r.text);
}

describe('searchMessages: every plan answers the rule', () => {
  test.each([
    ['common', 'relevance'], ['common', 'newest'],
    ['quarter', 'relevance'], ['quarter', 'newest'],
    ['stale', 'relevance'], ['stale', 'newest'],
    ['thin', 'relevance'], ['thin', 'newest'],
    ['rare', 'relevance'], ['rare', 'newest'], ['are', 'newest'],
  ] as Array<[string, SearchSort]>)('"%s", sort=%s', async (query, sort) => {
    const hits = await searchMessages(database.db, { accountId: ACCOUNT, identityId: ME, query, sort, limit: 50, cursor: null });
    const want = await expected(query, sort, 51);
    expect(want.length).toBeGreaterThan(0);
    expect(hits.map((h) => h.message.text)).toEqual(want);
    expect(hits.every((h) => h.message.channelId !== CH(5))).toBe(true);
  }, 60_000);
});
