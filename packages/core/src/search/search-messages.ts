import { sql, type Executor, type SQL } from '@teamchat/db';
import type { MessageRow } from '../messaging/views';

export type SearchSort = 'relevance' | 'newest';
export const SEARCH_SORTS: readonly SearchSort[] = ['relevance', 'newest'];

/** Queries shorter than this match whole words only: the trigram index needs 3 characters. */
export const SUBSTRING_MIN_CHARS = 3;

export interface SearchInput {
  accountId: string;
  identityId: string;
  query: string;
  sort: SearchSort;
  /** only this channel or DM (still only if the caller is a member) */
  channelId?: string;
  /** only messages by this identity */
  fromIdentityId?: string;
  /** only messages strictly after / before these instants */
  after?: Date;
  before?: Date;
  limit: number;
  /** the keyset to continue after: relevance [rank, ts µs, channel], newest [ts µs, channel] */
  cursor: string[] | null;
}

export interface SearchHit {
  message: MessageRow;
  /** ts_rank_cd as PostgreSQL prints it (exact for the cursor); "0" for a substring-only match */
  rank: string;
}

/**
 * The query as a literal regular expression (every character but letters, digits and spaces
 * escaped: in PostgreSQL's AREs `\` before a non-alphanumeric is that character). A regular
 * expression rather than ILIKE '%q%': both use the trigram index, but ILIKE's recheck backtracks
 * (a 200-character query against 3,000 texts of 16 KB crafted to pass the index took ~50 s
 * here, `~*` about 1 s; docs/performance.md "Search").
 */
export function literalRegex(query: string): string {
  return query.replace(/[^\p{L}\p{N} ]/gu, (c) => `\\${c}`);
}

/**
 * How many matches a search works with at most: when there are no more, all of them are ranked
 * (or sorted) exactly; when there are more, `relevance` ranks the newest this many.
 */
export const RELEVANCE_CANDIDATES = 1000;

/** How many of the newest messages in scope the window plan reads. */
export const SEARCH_WINDOW = 4000;
/** The most rows the walk plan walks when it walks: beyond, it sorts every match instead. */
export const WALK_BUDGET = 30_000;
/**
 * The planner's estimate of a query's matches in the whole table (pg_stats of `search_vector`,
 * the histogram of `text`) at or under which the `few` plan goes first: its bitmap then holds
 * at most about this many entries (a few ms), whatever the scope.
 */
export const FEW_FIRST_ESTIMATE = 10_000;

type Plan = 'window' | 'few' | 'walk' | 'sorted';

/** The planner settings that force each plan's scan (SET LOCAL: this transaction only). */
const FORCE: Record<Plan, string> = {
  window: 'SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off; SET LOCAL enable_indexscan = on',
  few: 'SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = on; SET LOCAL enable_indexscan = off',
  walk: 'SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off; SET LOCAL enable_indexscan = on',
  sorted: 'SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = on; SET LOCAL enable_indexscan = off',
};

/** The search with the caller's channels resolved (what every statement reads). */
export interface ScopedSearch extends SearchInput {
  /** the channels and DMs searched: the caller's memberships (narrowed by channelId), as a PostgreSQL array literal */
  channels: string;
}

/**
 * Messages matching `query` in the channels and DMs the identity is a member of (docs/api.md
 * "Search"). A message matches when its words match the query as `websearch_to_tsquery` reads it
 * (quotes, OR, -word; config `simple`; any input is valid), or, for a query of 3 characters or
 * more, when its text contains the query as typed (case-insensitive; identifiers, URLs, e-mail
 * addresses, parts of words), through the pg_trgm index. A query of excluded words only matches
 * nothing (it would match almost everything). `relevance` ranks the newest RELEVANCE_CANDIDATES
 * matches (all of them when there are no more) by `ts_rank_cd`, ties newest; `newest` reaches
 * every match. Keyset on (rank,) ts, channel; `limit + 1` rows.
 *
 * The caller's channels are read first and passed to every statement as a constant array, which
 * PostgreSQL checks with a hash per row (a 200-channel member: 1 ms per 2,000 rows, against 24 ms
 * for a subquery's array searched element by element; docs/performance.md "Search").
 *
 * Then up to three plans, each scan forced, chosen by what the statistics and each plan find,
 * never by the planner's choice of scan (for rare words and for the regular expression it picked
 * a 12 s walk or a 1 s bitmap scan; docs/performance.md "Search"):
 * - `few`: the matches through the two GIN indexes (bitmap scan), at most
 *   RELEVANCE_CANDIDATES + 1 of them in no order. Enough when that is all of them (they are then
 *   ranked or sorted exactly): a rare word. Tried first when the planner's estimate of the
 *   query's matches in the whole table is at most FEW_FIRST_ESTIMATE (a selective word answers
 *   in a few ms); otherwise after the window.
 * - `window`: the newest SEARCH_WINDOW messages in scope (messages_account_ts_idx walked
 *   backwards), filtered by the match. Enough when it finds what the answer needs (the page for
 *   `newest`, RELEVANCE_CANDIDATES matches for `relevance`) or when the scope has no more
 *   messages: a common word.
 * - more matches than the window finds: `walk` (the window without its bound, stopping after the
 *   rows it needs) when the window's share of matches says it needs at most WALK_BUDGET rows
 *   (without trying `few` when the estimate was over FEW_FIRST_ESTIMATE), else `few` when not
 *   tried yet, else `sorted` (every match through the GIN indexes, the newest kept by a top-N
 *   sort): the cheaper of "rows until enough matches" and "all the matches".
 * Runs in its own transaction (SET LOCAL of the planner settings); nested in a caller's
 * transaction it is a savepoint.
 */
export function searchMessages(db: Executor, input: SearchInput): Promise<SearchHit[]> {
  const need = input.sort === 'relevance' ? RELEVANCE_CANDIDATES : input.limit + 1;
  return db.transaction(async (tx) => {
    const channels = await searchChannels(tx, input);
    if (channels.length === 0) return [];
    const scoped: ScopedSearch = { ...input, channels: arrayLiteral(channels) };
    const run = async (plan: Plan) => {
      await tx.execute(sql.raw(FORCE[plan]));
      const rows = (await tx.execute<Record<string, unknown>>(searchStatement(scoped, plan))).rows;
      return { rows, found: rows[0] ? Number(rows[0].found) : 0 };
    };
    const hits = (rows: Array<Record<string, unknown>>) => rows.map((row) => ({ message: toRow(row), rank: row.rank_text as string }));
    let few = (await estimateMatches(tx, scoped)) <= FEW_FIRST_ESTIMATE ? await run('few') : null;
    if (few && few.found <= RELEVANCE_CANDIDATES) return hits(few.rows);
    const window = await run('window');
    if (window.found >= need || (await scopeRows(tx, scoped)) < SEARCH_WINDOW) return hits(window.rows);
    // A common word the window fell short of (for `relevance`, a word in a quarter of the messages
    // or less): the walk is bounded and cheap, the few plan's bitmap of every match is not.
    const walkRows = window.found === 0 ? Infinity : (need * SEARCH_WINDOW) / window.found;
    if (few === null && walkRows <= WALK_BUDGET) return hits((await run('walk')).rows);
    few ??= await run('few');
    if (few.found <= RELEVANCE_CANDIDATES) return hits(few.rows);
    return hits((await run(walkRows <= WALK_BUDGET ? 'walk' : 'sorted')).rows);
  });
}

/** The channels searched: the caller's memberships in the account, only `channelId` when given. */
async function searchChannels(tx: Executor, input: SearchInput): Promise<string[]> {
  const only = input.channelId ? sql` AND cm.channel_id = ${input.channelId}` : sql``;
  const rows = (await tx.execute<{ channel_id: string }>(sql`
    SELECT cm.channel_id FROM channel_members cm
     WHERE cm.identity_id = ${input.identityId} AND cm.account_id = ${input.accountId}${only}`)).rows;
  return rows.map((r) => r.channel_id);
}

/** `{"a","b"}`: a PostgreSQL text array literal (quoted, `"` and `\` escaped). */
export function arrayLiteral(values: string[]): string {
  return `{${values.map((v) => `"${v.replace(/["\\]/g, (c) => `\\${c}`)}"`).join(',')}}`;
}

/**
 * The planner's estimate of the query's matches over the whole table (no scope: the GIN indexes
 * hold every account's messages, so their bitmap costs what the whole table holds). PostgreSQL
 * estimates a word from the most common lexemes of `search_vector` (below them: at most half the
 * least common one's share) and the regular expression by trying it on `text`'s histogram.
 */
async function estimateMatches(tx: Executor, input: SearchInput): Promise<number> {
  const rows = (await tx.execute<{ 'QUERY PLAN': Array<{ Plan: { 'Plan Rows': number } }> }>(
    sql`EXPLAIN (FORMAT JSON) SELECT 1 FROM messages m WHERE ${matchOf(input)}`,
  )).rows;
  return Number(rows[0]['QUERY PLAN'][0].Plan['Plan Rows']);
}

/** How many messages are in scope, counted up to SEARCH_WINDOW (an index-only scan). */
async function scopeRows(tx: Executor, input: ScopedSearch): Promise<number> {
  await tx.execute(sql.raw(FORCE.window));
  const rows = (await tx.execute<{ n: string }>(sql`
    SELECT count(*) AS n FROM (SELECT 1 FROM messages m WHERE ${scopeFilters(input)} LIMIT ${SEARCH_WINDOW}) s`)).rows;
  return Number(rows[0].n);
}

/** Who may be searched and the caller's filters: everything but the text match. */
function scopeFilters(input: ScopedSearch): SQL {
  const filters: SQL[] = [
    sql`m.account_id = ${input.accountId}`,
    // `|| ''` keeps the channels a filter, never an index condition (as `channel_id = ANY(…)` the
    // planner ANDed a scan of every key of the messages primary key with the text match's
    // bitmap); a constant array is checked by hashing.
    sql`(m.channel_id || '') = ANY(${input.channels}::text[])`,
  ];
  if (input.fromIdentityId) filters.push(sql`m.author_identity_id = ${input.fromIdentityId}`);
  if (input.after) filters.push(sql`m.ts_micros > ${BigInt(input.after.getTime()) * BigInt(1000)}`);
  if (input.before) filters.push(sql`m.ts_micros < ${BigInt(input.before.getTime()) * BigInt(1000)}`);
  if (input.sort === 'newest' && input.cursor) {
    filters.push(sql`(m.ts_micros, m.channel_id) < (${BigInt(input.cursor[0])}, ${input.cursor[1]})`);
  }
  return sql.join(filters, sql` AND `);
}

const tsqueryOf = (input: SearchInput) => sql`websearch_to_tsquery('simple', ${input.query})`;

/** The text match: the words, or (3 characters or more) the query as typed. */
function matchOf(input: SearchInput): SQL {
  const tsq = tsqueryOf(input);
  const words = sql`(querytree(${tsq}) <> 'T' AND m.search_vector @@ ${tsq})`;
  return input.query.length >= SUBSTRING_MIN_CHARS ? sql`(${words} OR m.text ~* ${literalRegex(input.query)})` : words;
}

/** The statement of one plan of searchMessages (the bench EXPLAINs them). */
export function searchStatement(input: ScopedSearch, plan: Plan): SQL {
  const tsq = tsqueryOf(input);
  const match = matchOf(input);
  const scope = scopeFilters(input);
  const c = input.cursor;
  const relevance = input.sort === 'relevance';
  const need = relevance ? RELEVANCE_CANDIDATES : input.limit + 1;
  const newestFirst = sql`ORDER BY m.ts_micros DESC, m.channel_id DESC`;
  let candidates: SQL;
  if (plan === 'window') {
    candidates = sql`SELECT * FROM (SELECT ${COLUMNS}, m.search_vector FROM messages m WHERE ${scope} ${newestFirst} LIMIT ${SEARCH_WINDOW}) m
                      WHERE ${match} ${newestFirst} LIMIT ${need}`;
  } else if (plan === 'few') {
    candidates = sql`SELECT ${COLUMNS}, m.search_vector FROM messages m WHERE ${scope} AND ${match} LIMIT ${RELEVANCE_CANDIDATES + 1}`;
  } else {
    // walk and sorted: the same statement, planned as an index walk or as bitmap + top-N sort (FORCE)
    candidates = sql`SELECT ${COLUMNS}, m.search_vector FROM messages m WHERE ${scope} AND ${match} ${newestFirst} LIMIT ${need}`;
  }
  const keyset = relevance && c ? sql`(rank, ts_micros, channel_id) < (${c[0]}::real, ${BigInt(c[1])}, ${c[2]})` : sql`true`;
  const order = relevance ? sql`rank DESC, ts_micros DESC, channel_id DESC` : sql`ts_micros DESC, channel_id DESC`;
  const rank = relevance ? sql`ts_rank_cd(search_vector, ${tsq})` : sql`0::real`;
  return sql`
    WITH candidates AS MATERIALIZED (${candidates}),
         ranked AS (SELECT *, ${rank} AS rank FROM candidates)
    SELECT ${RANKED_COLUMNS}, rank::text AS rank_text, (SELECT count(*) FROM candidates) AS found
      FROM ranked WHERE ${keyset}
     ORDER BY ${order}
     LIMIT ${input.limit + 1}`;
}

/** The message columns a hit carries (search_vector only inside the statement, for ranking). */
const NAMES = [
  'channel_id', 'ts_micros', 'account_id', 'author_identity_id', 'text', 'attachments', 'links', 'thread_ts_micros',
  'reply_count', 'mentions', 'broadcast', 'version', 'client_ref', 'session', 'created_at', 'edited_at',
];
const COLUMNS = sql.raw(NAMES.map((col) => `m.${col}`).join(', '));
const RANKED_COLUMNS = sql.raw(NAMES.join(', '));

function toRow(r: Record<string, unknown>): MessageRow {
  return {
    channelId: r.channel_id as string,
    tsMicros: BigInt(r.ts_micros as string | number),
    accountId: r.account_id as string,
    authorIdentityId: r.author_identity_id as string,
    text: r.text as string,
    attachments: r.attachments,
    links: r.links,
    threadTsMicros: r.thread_ts_micros === null ? null : BigInt(r.thread_ts_micros as string | number),
    replyCount: r.reply_count as number,
    mentions: r.mentions as string[],
    broadcast: r.broadcast as boolean,
    version: r.version as number,
    clientRef: r.client_ref as string | null,
    session: r.session,
    createdAt: new Date(r.created_at as string | Date),
    editedAt: r.edited_at === null ? null : new Date(r.edited_at as string | Date),
  };
}

/** The cursor's keyset of a hit, for the sort it was found with. */
export function searchKeyset(hit: SearchHit, sort: SearchSort): string[] {
  const key = [hit.message.tsMicros.toString(), hit.message.channelId];
  return sort === 'relevance' ? [hit.rank, ...key] : key;
}
