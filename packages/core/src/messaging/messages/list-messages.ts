import { and, asc, eq, gt, isNull, messages, or, runStatement, statement, type Executor } from '@teamchat/db';
import { errors } from '../../errors';
import type { Actor } from '../../principal';
import { loadChannel } from '../access';
import type { MessageRow, ReactionSummary } from '../views';
import { reactionsOf } from './load';

export type MessageWithReactions = { row: MessageRow; reactions: ReactionSummary[] };

async function withReactions(db: Executor, channelId: string, rows: MessageRow[]): Promise<MessageWithReactions[]> {
  const map = await reactionsOf(db, channelId, rows.map((r) => r.tsMicros));
  return rows.map((row) => ({ row, reactions: map.get(row.tsMicros) ?? [] }));
}

/** Message columns as the page statement returns them (bigints as text, so they stay exact). */
interface PageRow {
  kind: string;
  member: boolean;
  ts_micros: string | null;
  account_id: string;
  author_identity_id: string;
  text: string;
  attachments: unknown;
  links: unknown;
  thread_ts_micros: string | null;
  reply_count: number;
  mentions: string[];
  broadcast: boolean;
  version: number;
  client_ref: string | null;
  session: unknown;
  created_at: Date;
  edited_at: Date | null;
  reactions: ReactionSummary[] | null;
}

/**
 * The whole read in ONE round trip (issue 10): the channel of the account, whether the caller is
 * a member, and — only if so — a page of thread roots, newest first, before $4 (the cursor's
 * ts; none = from the newest), each with its reactions grouped per emoji in order of the first
 * reaction. No row: no such channel. A row with `member` false: not readable.
 */
const messagesPage = statement<PageRow>('messages_page', `
  WITH ch AS (
    SELECT c.id, c.kind,
           EXISTS (SELECT 1 FROM channel_members cm WHERE cm.channel_id = c.id AND cm.identity_id = $3) AS member
      FROM channels c
     WHERE c.id = $1 AND c.account_id = $2
  )
  SELECT ch.kind, ch.member, p.*
    FROM ch
    LEFT JOIN LATERAL (
      SELECT m.ts_micros::text AS ts_micros, m.account_id, m.author_identity_id, m.text, m.attachments, m.links,
             m.thread_ts_micros::text AS thread_ts_micros, m.reply_count, m.mentions, m.broadcast, m.version,
             m.client_ref, m.session, m.created_at, m.edited_at,
             (SELECT json_agg(json_build_object('emoji', g.emoji, 'count', g.n, 'by', g.by) ORDER BY g.first_at, g.emoji)
                FROM (SELECT r.emoji, count(*)::int AS n, array_agg(r.identity_id ORDER BY r.created_at, r.identity_id) AS by,
                             min(r.created_at) AS first_at
                        FROM reactions r
                       WHERE r.channel_id = m.channel_id AND r.ts_micros = m.ts_micros
                       GROUP BY r.emoji) g) AS reactions
        FROM messages m
       WHERE ch.member AND m.channel_id = ch.id AND m.thread_ts_micros IS NULL
         AND m.ts_micros < COALESCE($4::bigint, 9223372036854775807)
       ORDER BY m.ts_micros DESC
       LIMIT $5
    ) p ON true`);

/**
 * A channel's messages, newest first, keyset on ts (thread replies are read through their
 * thread). Since ts order is commit order per channel, paging back while others post never
 * skips or repeats a message: new posts land above the first page. Needs channel membership
 * (403 not_a_member); a DM the caller is not in does not exist (404).
 */
export async function listMessages(
  db: Executor,
  input: { actor: Actor; channelId: string; page: { limit: number; after: bigint | null } },
): Promise<MessageWithReactions[]> {
  const { actor, channelId, page } = input;
  const rows = await runStatement(db, messagesPage, [
    channelId, actor.accountId, actor.identityId, page.after === null ? null : page.after.toString(), page.limit + 1,
  ]);
  const first = rows[0];
  if (!first) throw errors.notFound('channel');
  if (!first.member) throw first.kind === 'dm' ? errors.notFound('channel') : errors.notAMember('channel');
  if (first.ts_micros === null) return [];
  return rows.map((r) => ({
    row: {
      channelId,
      tsMicros: BigInt(r.ts_micros!),
      accountId: r.account_id,
      authorIdentityId: r.author_identity_id,
      text: r.text,
      attachments: r.attachments,
      links: r.links,
      threadTsMicros: r.thread_ts_micros === null ? null : BigInt(r.thread_ts_micros),
      replyCount: r.reply_count,
      mentions: r.mentions,
      broadcast: r.broadcast,
      version: r.version,
      clientRef: r.client_ref,
      session: r.session,
      createdAt: r.created_at,
      editedAt: r.edited_at,
    },
    reactions: r.reactions ?? [],
  }));
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
