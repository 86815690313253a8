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
 * How many matches `relevance` ranks: the newest this many (in the caller's scope and filters).
 * Ranking every match of a word in half the messages of a large account would read all of them;
 * the newest matches are found by walking messages_account_ts_idx and stop early. `newest`
 * reaches every match. (docs/api.md "Search", docs/performance.md "Search").
 */
export const RELEVANCE_CANDIDATES = 2000;

/**
 * Messages matching `query` in the channels and DMs the identity is a member of (docs/api.md
 * "Search"). A message matches when its words match the query as `websearch_to_tsquery` reads it
 * (quotes, OR, -word; config `simple`; any input is valid), or, for a query of 3 characters or
 * more, when its text contains the query as typed (case-insensitive; identifiers, URLs, e-mail
 * addresses, parts of words), through the pg_trgm index. A query of excluded words only matches
 * nothing (it would match almost everything). `relevance`: the newest RELEVANCE_CANDIDATES
 * matches ordered by `ts_rank_cd`, ties newest; `newest`: every match, newest first. Keyset on
 * (rank,) ts, channel. `limit + 1` rows.
 *
 * The member channels are an array computed once (`= ANY(ARRAY(...))`), not a join, so a walk of
 * messages_account_ts_idx keeps its order and a common word stops after the rows it needs.
 */
export function searchMessages(db: Executor, input: SearchInput): Promise<SearchHit[]> {
  return db.execute<Record<string, unknown>>(searchStatement(input))
    .then((r) => r.rows.map((row) => ({ message: toRow(row), rank: row.rank_text as string })));
}

/** The statement searchMessages runs (the bench EXPLAINs it). */
export function searchStatement(input: SearchInput): SQL {
  const tsq = sql`websearch_to_tsquery('simple', ${input.query})`;
  const words = sql`(querytree(${tsq}) <> 'T' AND m.search_vector @@ ${tsq})`;
  const match = input.query.length >= SUBSTRING_MIN_CHARS ? sql`(${words} OR m.text ~* ${literalRegex(input.query)})` : words;
  const filters: SQL[] = [
    sql`m.account_id = ${input.accountId}`,
    // `IS TRUE` keeps this a filter, never an index condition: as one, the planner ANDed a scan of
    // every key of the messages primary key (all the member channels) with the text match's
    // bitmap (~500 ms instead of ~0.2 ms for a rare word over 1,000,000 messages).
    sql`(m.channel_id = ANY(ARRAY(SELECT cm.channel_id FROM channel_members cm WHERE cm.identity_id = ${input.identityId}))) IS TRUE`,
    match,
  ];
  if (input.channelId) filters.push(sql`m.channel_id = ${input.channelId}`);
  if (input.fromIdentityId) filters.push(sql`m.author_identity_id = ${input.fromIdentityId}`);
  if (input.after) filters.push(sql`m.ts_micros > ${BigInt(input.after.getTime()) * BigInt(1000)}`);
  if (input.before) filters.push(sql`m.ts_micros < ${BigInt(input.before.getTime()) * BigInt(1000)}`);
  const where = sql.join(filters, sql` AND `);
  const c = input.cursor;
  return input.sort === 'relevance'
    ? sql`
      WITH candidates AS MATERIALIZED (
        SELECT ${COLUMNS}, ts_rank_cd(m.search_vector, ${tsq}) AS rank
          FROM messages m
         WHERE ${where}
         ORDER BY m.ts_micros DESC, m.channel_id DESC
         LIMIT ${RELEVANCE_CANDIDATES}
      )
      SELECT *, rank::text AS rank_text FROM candidates
       ${c ? sql`WHERE (rank, ts_micros, channel_id) < (${c[0]}::real, ${BigInt(c[1])}, ${c[2]})` : sql``}
       ORDER BY rank DESC, ts_micros DESC, channel_id DESC
       LIMIT ${input.limit + 1}`
    : sql`
      SELECT ${COLUMNS}, '0' AS rank_text
        FROM messages m
       WHERE ${where} ${c ? sql`AND (m.ts_micros, m.channel_id) < (${BigInt(c[0])}, ${c[1]})` : sql``}
       ORDER BY m.ts_micros DESC, m.channel_id DESC
       LIMIT ${input.limit + 1}`;
}

/** The message columns a hit carries (never search_vector). */
const COLUMNS = sql.raw([
  'channel_id', 'ts_micros::text AS ts_micros', 'account_id', 'author_identity_id', 'text', 'attachments', 'links',
  'thread_ts_micros::text AS thread_ts_micros', 'reply_count', 'mentions', 'broadcast', 'version', 'client_ref', 'session',
  'created_at', 'edited_at',
].map((col) => `m.${col}`).join(', '));

function toRow(r: Record<string, unknown>): MessageRow {
  return {
    channelId: r.channel_id as string,
    tsMicros: BigInt(r.ts_micros as string),
    accountId: r.account_id as string,
    authorIdentityId: r.author_identity_id as string,
    text: r.text as string,
    attachments: r.attachments,
    links: r.links,
    threadTsMicros: r.thread_ts_micros === null ? null : BigInt(r.thread_ts_micros as string),
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
