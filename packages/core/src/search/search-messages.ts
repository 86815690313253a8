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

/** How many of the newest messages in scope the first plan reads before trying the others. */
export const SEARCH_WINDOW = 2000;
/** The most rows the third plan walks when it walks: beyond, it sorts every match instead. */
export const WALK_BUDGET = 30_000;

type Plan = 'window' | 'few' | 'walk' | 'sorted';

/** The planner settings that force each plan's scan (SET LOCAL: this transaction only). */
const FORCE: Record<Plan, string> = {
  window: 'SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off; SET LOCAL enable_indexscan = on',
  few: 'SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = on; SET LOCAL enable_indexscan = off',
  walk: 'SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off; SET LOCAL enable_indexscan = on',
  sorted: 'SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = on; SET LOCAL enable_indexscan = off',
};

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
 * Up to three plans, tried in turn and chosen by what each finds, never by the planner's
 * estimates (for rare words and for the regular expression they were off by 10× or more,
 * picking a 12 s walk or a 1 s bitmap scan; docs/performance.md "Search"):
 * 1. `window`: the newest SEARCH_WINDOW messages in scope (messages_account_ts_idx walked
 *    backwards), filtered by the match. Enough when it finds what the answer needs (the page for
 *    `newest`, RELEVANCE_CANDIDATES matches for `relevance`) or when the scope has no more
 *    messages: a common word.
 * 2. `few`: the matches through the two GIN indexes (bitmap scan), at most
 *    RELEVANCE_CANDIDATES + 1 of them in no order, so bounded work whatever the word. Enough when
 *    that is all of them (they are then ranked or sorted exactly): a rare word.
 * 3. more matches than that: `walk` (plan 1 without the window, stopping after the rows it
 *    needs) when the window's share of matches says it needs at most WALK_BUDGET rows, else
 *    `sorted` (every match through the GIN indexes, the newest kept by a top-N sort): the cheaper
 *    of "rows until enough matches" and "all the matches".
 * Runs in its own transaction (SET LOCAL of the planner settings); nested in a caller's
 * transaction it is a savepoint.
 */
export function searchMessages(db: Executor, input: SearchInput): Promise<SearchHit[]> {
  const need = input.sort === 'relevance' ? RELEVANCE_CANDIDATES : input.limit + 1;
  return db.transaction(async (tx) => {
    const run = async (plan: Plan) => {
      await tx.execute(sql.raw(FORCE[plan]));
      const rows = (await tx.execute<Record<string, unknown>>(searchStatement(input, plan))).rows;
      const first = rows[0];
      return { rows, found: first ? Number(first.found) : 0, scanned: first ? Number(first.scanned) : 0 };
    };
    const hits = (rows: Array<Record<string, unknown>>) => rows.map((row) => ({ message: toRow(row), rank: row.rank_text as string }));
    const window = await run('window');
    if (window.found >= need || (window.rows.length > 0 && window.scanned < SEARCH_WINDOW)) return hits(window.rows);
    if (window.rows.length === 0 && (await scopeIsSmall(tx, input))) return [];
    const few = await run('few');
    if (few.found <= RELEVANCE_CANDIDATES) return hits(few.rows);
    const walkRows = window.found === 0 ? Infinity : (need * SEARCH_WINDOW) / window.found;
    return hits((await run(walkRows <= WALK_BUDGET ? 'walk' : 'sorted')).rows);
  });
}

/** Whether the whole scope fits in the window (an empty window answer is then final). */
async function scopeIsSmall(tx: Executor, input: SearchInput): Promise<boolean> {
  const rows = (await tx.execute<{ n: string }>(sql`
    SELECT count(*) AS n FROM (SELECT 1 FROM messages m WHERE ${scopeFilters(input)} LIMIT ${SEARCH_WINDOW}) s`)).rows;
  return Number(rows[0].n) < SEARCH_WINDOW;
}

/** Who may be searched and the caller's filters: everything but the text match. */
function scopeFilters(input: SearchInput): SQL {
  const filters: SQL[] = [
    sql`m.account_id = ${input.accountId}`,
    // A filter, never an index condition (as `channel_id = ANY(…)` the planner ANDed a scan of
    // every key of the messages primary key with the text match's bitmap).
    sql`array_position(ARRAY(SELECT cm.channel_id FROM channel_members cm WHERE cm.identity_id = ${input.identityId}), m.channel_id) IS NOT NULL`,
  ];
  if (input.channelId) filters.push(sql`m.channel_id = ${input.channelId}`);
  if (input.fromIdentityId) filters.push(sql`m.author_identity_id = ${input.fromIdentityId}`);
  if (input.after) filters.push(sql`m.ts_micros > ${BigInt(input.after.getTime()) * BigInt(1000)}`);
  if (input.before) filters.push(sql`m.ts_micros < ${BigInt(input.before.getTime()) * BigInt(1000)}`);
  if (input.sort === 'newest' && input.cursor) {
    filters.push(sql`(m.ts_micros, m.channel_id) < (${BigInt(input.cursor[0])}, ${input.cursor[1]})`);
  }
  return sql.join(filters, sql` AND `);
}

/** The statement of one plan of searchMessages (the bench EXPLAINs them). */
export function searchStatement(input: SearchInput, plan: Plan): SQL {
  const tsq = sql`websearch_to_tsquery('simple', ${input.query})`;
  const words = sql`(querytree(${tsq}) <> 'T' AND m.search_vector @@ ${tsq})`;
  const match = input.query.length >= SUBSTRING_MIN_CHARS ? sql`(${words} OR m.text ~* ${literalRegex(input.query)})` : words;
  const scope = scopeFilters(input);
  const c = input.cursor;
  const relevance = input.sort === 'relevance';
  const need = relevance ? RELEVANCE_CANDIDATES : input.limit + 1;
  const newestFirst = sql`ORDER BY m.ts_micros DESC, m.channel_id DESC`;
  let candidates: SQL;
  let scanned = sql`0`;
  if (plan === 'window') {
    candidates = sql`SELECT * FROM (SELECT ${COLUMNS}, m.search_vector FROM messages m WHERE ${scope} ${newestFirst} LIMIT ${SEARCH_WINDOW}) m
                      WHERE ${match} ${newestFirst} LIMIT ${need}`;
    scanned = sql`(SELECT count(*) FROM (SELECT 1 FROM messages m WHERE ${scope} LIMIT ${SEARCH_WINDOW}) w)`;
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
    SELECT ${RANKED_COLUMNS}, rank::text AS rank_text, (SELECT count(*) FROM candidates) AS found, ${scanned} AS scanned
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
