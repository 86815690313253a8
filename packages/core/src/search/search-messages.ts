import { and, channelMembers, eq, getTableColumns, messages, sql, type Executor, type SQL } from '@teamchat/db';
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

const { searchVector: _searchVector, ...messageColumns } = getTableColumns(messages);

/**
 * Messages matching `query` in the channels and DMs the identity is a member of (docs/api.md
 * "Search"). A message matches when its words match the query as `websearch_to_tsquery` reads it
 * (quotes, OR, -word; config `simple`; any input is valid), or, for a query of 3 characters or
 * more, when its text contains the query as typed (case-insensitive; identifiers, URLs, e-mail
 * addresses, parts of words), through the pg_trgm index. A query of excluded words only matches
 * nothing (it would match almost everything). Ordered by `ts_rank_cd` then newest
 * (`relevance`), or newest first (`newest`); keyset on (rank,) ts, channel. `limit + 1` rows.
 */
export function searchMessages(db: Executor, input: SearchInput): Promise<SearchHit[]> {
  const tsq = sql`websearch_to_tsquery('simple', ${input.query})`;
  const words = sql`(querytree(${tsq}) <> 'T' AND ${messages.searchVector} @@ ${tsq})`;
  const match = input.query.length >= SUBSTRING_MIN_CHARS
    ? sql`(${words} OR ${messages.text} ~* ${literalRegex(input.query)})`
    : words;
  const rank = sql`ts_rank_cd(${messages.searchVector}, ${tsq})`;
  const filters: Array<SQL | undefined> = [
    eq(messages.accountId, input.accountId),
    match,
    input.channelId ? eq(messages.channelId, input.channelId) : undefined,
    input.fromIdentityId ? eq(messages.authorIdentityId, input.fromIdentityId) : undefined,
    input.after ? sql`${messages.tsMicros} > ${BigInt(input.after.getTime()) * BigInt(1000)}` : undefined,
    input.before ? sql`${messages.tsMicros} < ${BigInt(input.before.getTime()) * BigInt(1000)}` : undefined,
  ];
  const c = input.cursor;
  if (c && input.sort === 'relevance') {
    filters.push(sql`(${rank}, ${messages.tsMicros}, ${messages.channelId}) < (${c[0]}::real, ${BigInt(c[1])}, ${c[2]})`);
  } else if (c) {
    filters.push(sql`(${messages.tsMicros}, ${messages.channelId}) < (${BigInt(c[0])}, ${c[1]})`);
  }
  const order = input.sort === 'relevance'
    ? [sql`${rank} DESC`, sql`${messages.tsMicros} DESC`, sql`${messages.channelId} DESC`]
    : [sql`${messages.tsMicros} DESC`, sql`${messages.channelId} DESC`];
  return db
    .select({ message: messageColumns, rank: sql<string>`${rank}::text` })
    .from(messages)
    .innerJoin(channelMembers, and(eq(channelMembers.channelId, messages.channelId), eq(channelMembers.identityId, input.identityId)))
    .where(and(...filters))
    .orderBy(...order)
    .limit(input.limit + 1);
}

/** The cursor's keyset of a hit, for the sort it was found with. */
export function searchKeyset(hit: SearchHit, sort: SearchSort): string[] {
  const key = [hit.message.tsMicros.toString(), hit.message.channelId];
  return sort === 'relevance' ? [hit.rank, ...key] : key;
}
