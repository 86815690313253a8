import { and, asc, eq, gt, isNull, messages, or, runStatement, statement, type Executor } from '@teamchat/db';
import { AuthenticationNotConfirmed, authenticationConfirmedSql, confirmParams, type AuthenticationToConfirm } from '../../auth/remembered-authentications';
import { errors } from '../../errors';
import type { Actor } from '../../principal';
import { loadChannel } from '../access';
import { messageView, type MessageRow, type MessageView, type ReactionSummary } from '../views';
import { reactionsOf } from './load';

export type MessageWithReactions = { row: MessageRow; reactions: ReactionSummary[] };

async function withReactions(db: Executor, channelId: string, rows: MessageRow[]): Promise<MessageWithReactions[]> {
  const map = await reactionsOf(db, channelId, rows.map((r) => r.tsMicros));
  return rows.map((row) => ({ row, reactions: map.get(row.tsMicros) ?? [] }));
}

/**
 * A message of the page as the statement returns it: one JSON array per message (PostgreSQL
 * formats `ts` and the times; the client then parses the whole page with one JSON.parse
 * instead of decoding ~15 typed columns per row).
 */
type PageTuple = [
  ts: string, author: string, text: string, attachments: unknown, links: unknown, threadTs: string | null,
  replyCount: number, mentions: string[], broadcast: boolean, reactions: Array<[emoji: string, count: number, by: string[]]>,
  version: number, clientRef: string | null, session: unknown, createdAt: string, editedAt: string | null,
];

/** `ts` formatted as formatTs does: "<seconds>.<6 digits>". */
const TS_SQL = (col: string) => `(${col} / 1000000)::text || '.' || lpad((${col} % 1000000)::text, 6, '0')`;
/** A time formatted as Date#toISOString does (milliseconds, truncated like a JS Date). */
const ISO_SQL = (col: string) => `to_char(${col} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/**
 * The whole read in ONE round trip (docs/performance.md) and one row: the channel of the account, whether
 * the caller is a member, and — only if so — a page of thread roots, newest first, before $4
 * (the cursor's ts; none = from the newest), each with its reactions grouped per emoji in order
 * of the first reaction. Always one row: `authenticated` false when a remembered authentication
 * ($6-$11, remembered-authentications.ts; all null: none) no longer holds, and then nothing else
 * is read; `kind` null: no such channel; `member` false: not readable.
 */
const messagesPage = statement<{ authenticated: boolean; kind: string | null; member: boolean | null; page: PageTuple[] | null }>('messages_page', `
  WITH auth AS (
    SELECT ${authenticationConfirmedSql(6, '$2::text')} AS ok
  ), ch AS (
    SELECT c.id, c.kind,
           EXISTS (SELECT 1 FROM channel_members cm WHERE cm.channel_id = c.id AND cm.identity_id = $3) AS member
      FROM channels c
     WHERE c.id = $1 AND c.account_id = $2 AND (SELECT ok FROM auth)
  )
  SELECT (SELECT ok FROM auth) AS authenticated, ch.kind, ch.member,
         (SELECT json_agg(json_build_array(
                   ${TS_SQL('p.ts_micros')}, p.author_identity_id, p.text, p.attachments, p.links,
                   CASE WHEN p.thread_ts_micros IS NULL THEN NULL ELSE ${TS_SQL('p.thread_ts_micros')} END,
                   p.reply_count, p.mentions, p.broadcast,
                   COALESCE((SELECT json_agg(json_build_array(g.emoji, g.n, g.by) ORDER BY g.first_at, g.emoji)
                               FROM (SELECT r.emoji, count(*)::int AS n, array_agg(r.identity_id ORDER BY r.created_at, r.identity_id) AS by,
                                            min(r.created_at) AS first_at
                                       FROM reactions r
                                      WHERE r.channel_id = p.channel_id AND r.ts_micros = p.ts_micros
                                      GROUP BY r.emoji) g), '[]'::json),
                   p.version, p.client_ref, p.session, ${ISO_SQL('p.created_at')}, ${ISO_SQL('p.edited_at')}
                 ) ORDER BY p.ts_micros DESC)
            FROM (SELECT m.* FROM messages m
                   WHERE ch.member AND m.channel_id = ch.id AND m.thread_ts_micros IS NULL
                     AND m.ts_micros < COALESCE($4::bigint, 9223372036854775807)
                   ORDER BY m.ts_micros DESC
                   LIMIT $5) p) AS page
    FROM (VALUES (1)) AS one (x) LEFT JOIN ch ON true`);

/**
 * A channel's messages, newest first, keyset on ts (thread replies are read through their
 * thread), as views (up to `limit + 1`: the extra one only tells there is more). Since ts order
 * is commit order per channel, paging back while others post never skips or repeats a message:
 * new posts land above the first page. Needs channel membership (403 not_a_member); a DM the
 * caller is not in does not exist (404).
 */
export async function listMessages(
  db: Executor,
  input: {
    actor: Actor; channelId: string; page: { limit: number; after: bigint | null };
    /** a read authenticated from memory: what its statement must find still true (remembered-authentications.ts) */
    confirm?: AuthenticationToConfirm;
  },
): Promise<MessageView[]> {
  const { actor, channelId, page } = input;
  const [row] = await runStatement(db, messagesPage, [
    channelId, actor.accountId, actor.identityId, page.after === null ? null : page.after.toString(), page.limit + 1,
    ...confirmParams(input.confirm),
  ]);
  if (!row.authenticated) throw new AuthenticationNotConfirmed();
  if (row.kind === null) throw errors.notFound('channel');
  if (!row.member) throw row.kind === 'dm' ? errors.notFound('channel') : errors.notAMember('channel');
  return (row.page ?? []).map((t) => messageView({
    ts: t[0], channelId, author: t[1], text: t[2], attachments: t[3], links: t[4], threadTs: t[5], replyCount: t[6],
    mentions: t[7], broadcast: t[8], reactions: t[9].map(([emoji, count, by]) => ({ emoji, count, by })),
    version: t[10], clientRef: t[11], session: t[12], createdAt: t[13], editedAt: t[14],
  }));
}

/** The keyset of a message view: its ts in microseconds, as a string (JSON-safe, like tsKeyset reads it). */
export function messageKeyset(view: MessageView): string {
  return view.ts.replace('.', '');
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
