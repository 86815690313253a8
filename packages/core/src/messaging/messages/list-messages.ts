import { and, asc, eq, gt, isNull, messages, or, runStatement, statement, type Executor } from '@teamchat/db';
import { AuthenticationNotConfirmed, authenticationConfirmedSql, confirmParams, type AuthenticationToConfirm } from '../../auth/remembered-authentications';
import { errors } from '../../errors';
import type { Actor } from '../../principal';
import { loadChannel } from '../access';
import type { MessageRow, MessageView, ReactionSummary } from '../views';
import { reactionsOf } from './load';

export type MessageWithReactions = { row: MessageRow; reactions: ReactionSummary[] };

async function withReactions(db: Executor, channelId: string, rows: MessageRow[]): Promise<MessageWithReactions[]> {
  const map = await reactionsOf(db, channelId, rows.map((r) => r.tsMicros));
  return rows.map((row) => ({ row, reactions: map.get(row.tsMicros) ?? [] }));
}

/** `ts` formatted as formatTs does: "<seconds>.<6 digits>". */
const TS_SQL = (col: string) => `(${col} / 1000000)::text || '.' || lpad((${col} % 1000000)::text, 6, '0')`;
/** A time formatted as Date#toISOString does (milliseconds, truncated like a JS Date). */
const ISO_SQL = (col: string) => `to_char(${col} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/**
 * The message view (views.ts messageView, the one shape of a message) as the page statement
 * writes it, field for field in messageView's order, over `p` (a messages row) and `rx` (its
 * reactions). Typed against MessageView, so a field added to the view cannot be left out here;
 * read-page.test.ts checks that every field and the order equal messageView's.
 */
const PAGE_VIEW_SQL: { [K in keyof MessageView]: string } = {
  ts: TS_SQL('p.ts_micros'),
  channel_id: 'p.channel_id',
  author: 'p.author_identity_id',
  text: 'p.text',
  attachments: 'p.attachments',
  links: 'p.links',
  thread_ts: `CASE WHEN p.thread_ts_micros IS NULL THEN NULL ELSE ${TS_SQL('p.thread_ts_micros')} END`,
  reply_count: 'p.reply_count',
  mentions: 'p.mentions',
  broadcast: 'p.broadcast',
  reactions: `COALESCE(rx.reactions, '[]'::json)`,
  version: 'p.version',
  client_ref: 'p.client_ref',
  session: 'p.session',
  created_at: ISO_SQL('p.created_at'),
  edited_at: ISO_SQL('p.edited_at'),
};
/** A reaction summary (views.ts ReactionSummary) as the page statement writes it, over `g` (one emoji of one message). */
const REACTION_SQL: { [K in keyof ReactionSummary]: string } = { emoji: 'g.emoji', count: 'g.n', by: 'g.by' };

/** A JSON object with `fields`' keys in their order, as a record of named columns (`row_to_json`'s form: cheaper than json_build_object's key-value pairs). */
const columnsSql = (fields: Record<string, string>) => Object.entries(fields).map(([key, sql]) => `${sql} AS "${key}"`).join(', ');

/**
 * The whole read in ONE round trip and one row (docs/performance.md "The page read"): the
 * channel of the account, whether the caller is a member, and, only if so, a page of up to $5
 * thread roots, newest first, before $4 (the cursor's ts; none = from the newest), each with its
 * reactions grouped per emoji in order of the first reaction. The page comes as the text of a
 * JSON array of message views, which the API writes into its answer as is: no parsing, no
 * stringifying again. `more`: an older root beyond the page exists (one index probe);
 * `last_ts`: the page's last ts in microseconds (the next cursor's keyset). Always one row:
 * `authenticated` false when a remembered authentication ($6-$11, remembered-authentications.ts;
 * all null: none) no longer holds, and then nothing else is read; `kind` null: no such channel;
 * `member` false: not readable. The reactions are looked up once per row of the page, an index
 * probe each (`OFFSET 0` keeps the lookup from being flattened into a join, which a plan could
 * make a scan of every reaction), and grouped once for the whole page.
 * BY KEY (statements.ts): one generic plan on the API's by-key pool. In auto mode, once the
 * tables had statistics, the generic plan's estimate (a `LIMIT $5` is taken as a tenth of the
 * channel's rows) lost to each custom one and the page was planned on every read, ~0.8 ms of
 * PostgreSQL's time; every table here is reached by its key (read-page.test.ts checks the plan).
 */
const messagesPage = statement<{ authenticated: boolean; kind: string | null; member: boolean | null; data: string; more: boolean; last_ts: string | null }>('messages_page', `
  WITH auth AS (
    SELECT ${authenticationConfirmedSql(6, '$2::text')} AS ok
  ), ch AS (
    SELECT c.id, c.kind,
           EXISTS (SELECT 1 FROM channel_members cm WHERE cm.channel_id = c.id AND cm.identity_id = $3) AS member
      FROM channels c
     WHERE c.id = $1 AND c.account_id = $2 AND (SELECT ok FROM auth)
  ), page AS (
    SELECT m.* FROM messages m
     WHERE m.channel_id = (SELECT id FROM ch WHERE member) AND m.thread_ts_micros IS NULL
       AND m.ts_micros < COALESCE($4::bigint, 9223372036854775807)
     ORDER BY m.ts_micros DESC
     LIMIT $5
  ), rx AS MATERIALIZED (
    SELECT g.ts_micros, json_agg((SELECT v FROM (SELECT ${columnsSql(REACTION_SQL)}) v) ORDER BY g.first_at, g.emoji) AS reactions
      FROM (SELECT r.ts_micros, r.emoji, count(*)::int AS n, array_agg(r.identity_id ORDER BY r.created_at, r.identity_id) AS by,
                   min(r.created_at) AS first_at
              FROM page p CROSS JOIN LATERAL (SELECT * FROM reactions r WHERE r.channel_id = p.channel_id AND r.ts_micros = p.ts_micros OFFSET 0) r
             GROUP BY r.ts_micros, r.emoji) g
     GROUP BY g.ts_micros
  )
  SELECT (SELECT ok FROM auth) AS authenticated, ch.kind, ch.member,
         (SELECT COALESCE(json_agg(v ORDER BY p.ts_micros DESC), '[]'::json)::text
            FROM page p LEFT JOIN rx ON rx.ts_micros = p.ts_micros
            CROSS JOIN LATERAL (SELECT ${columnsSql(PAGE_VIEW_SQL)}) v) AS data,
         EXISTS (SELECT 1 FROM messages m
                  WHERE m.channel_id = (SELECT id FROM ch WHERE member) AND m.thread_ts_micros IS NULL
                    AND m.ts_micros < (SELECT min(ts_micros) FROM page)) AS more,
         (SELECT min(ts_micros) FROM page)::text AS last_ts
    FROM (VALUES (1)) AS one (x) LEFT JOIN ch ON true`, { byKey: true });

/** A page of a channel's messages: the text of a JSON array of message views, and the keyset to continue after (null: the last page). */
export interface MessagesPageText {
  data: string;
  nextKeyset: string | null;
}

/**
 * A channel's messages, newest first, keyset on ts (thread replies are read through their
 * thread), as the text of a JSON array of views, `limit` at most. Since ts order is commit
 * order per channel, paging back while others post never skips or repeats a message: new posts
 * land above the first page. Needs channel membership (403 not_a_member); a DM the caller is
 * not in does not exist (404).
 */
export async function listMessages(
  db: Executor,
  input: {
    actor: Actor; channelId: string; page: { limit: number; after: bigint | null };
    /** a read authenticated from memory: what its statement must find still true (remembered-authentications.ts) */
    confirm?: AuthenticationToConfirm;
  },
): Promise<MessagesPageText> {
  const { actor, channelId, page } = input;
  const [row] = await runStatement(db, messagesPage, [
    channelId, actor.accountId, actor.identityId, page.after === null ? null : page.after.toString(), page.limit,
    ...confirmParams(input.confirm),
  ]);
  if (!row.authenticated) throw new AuthenticationNotConfirmed();
  if (row.kind === null) throw errors.notFound('channel');
  if (!row.member) throw row.kind === 'dm' ? errors.notFound('channel') : errors.notAMember('channel');
  return { data: row.data, nextKeyset: row.more ? row.last_ts : null };
}

/**
 * A thread: its root message first, then the replies oldest first, keyset on ts (Slack's
 * conversations.replies shape). A deleted root leaves the replies; nothing at all is 404.
 */
export async function readThread(
  db: Executor,
  input: { actor: Actor; channelId: string; threadTsMicros: bigint; page: { limit: number; after: bigint | null } },
): Promise<MessageWithReactions[]> {
  const { channel } = await loadChannel(db, input.actor, input.channelId, 'member');
  const t = input.threadTsMicros;
  const rows = await db
    .select()
    .from(messages)
    .where(and(
      eq(messages.channelId, channel.id),
      or(and(eq(messages.tsMicros, t), isNull(messages.threadTsMicros)), eq(messages.threadTsMicros, t)),
      input.page.after === null ? undefined : gt(messages.tsMicros, input.page.after),
    ))
    .orderBy(asc(messages.tsMicros))
    .limit(input.page.limit + 1);
  if (rows.length === 0 && input.page.after === null) throw errors.notFound('thread');
  return withReactions(db, channel.id, rows);
}
