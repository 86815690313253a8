import { and, asc, desc, eq, gt, isNull, lt, messages, or, type Executor } from '@teamchat/db';
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

/**
 * A channel's messages, newest first, keyset on ts (thread replies are read through their
 * thread). Since ts order is commit order per channel, paging back while others post never
 * skips or repeats a message: new posts land above the first page.
 */
export async function listMessages(
  db: Executor,
  input: { actor: Actor; channelId: string; page: { limit: number; after: bigint | null } },
): Promise<MessageWithReactions[]> {
  const { channel } = await loadChannel(db, input.actor, input.channelId, 'member');
  const rows = await db
    .select()
    .from(messages)
    .where(and(
      eq(messages.channelId, channel.id),
      isNull(messages.threadTsMicros),
      input.page.after === null ? undefined : lt(messages.tsMicros, input.page.after),
    ))
    .orderBy(desc(messages.tsMicros))
    .limit(input.page.limit + 1);
  return withReactions(db, channel.id, rows);
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
