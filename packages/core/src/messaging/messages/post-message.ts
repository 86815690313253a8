import { and, channelMembers, eq, identities, inArray, messages, ne, sql, type Executor } from '@teamchat/db';
import { errors } from '../../errors';
import type { Actor } from '../../principal';
import { explainNoAccess } from '../access';
import type { Attachment } from '../content';
import { messagePostedEvents, recordEvents, type MessageSession } from '../../events';
import { parseMentions } from '../mentions';
import { allocateTs } from '../ts';
import type { MessageRow } from '../views';

export interface PostMessageInput {
  actor: Actor;
  channelId: string;
  text: string;
  attachments?: Attachment[];
  links?: string[];
  /** the thread to reply in; a reply's ts is taken as its thread's root */
  threadTsMicros?: bigint;
  clientRef?: string;
  session?: MessageSession | null;
}

/**
 * Posts a message: a new ts under the channel's lock (membership checked in the same
 * statement), the message row, the thread root's reply count, and the events, all in the
 * caller's transaction: exactly one message.posted; thread.replied for a reply; one mention per
 * mentioned identity (not the author) or one broadcast mention; dm.received per other DM member.
 */
export async function postMessage(tx: Executor, input: PostMessageInput): Promise<MessageRow> {
  const { actor } = input;
  // Work that needs no ts runs before the channel row is locked: the lock is held until commit.
  const parsed = parseMentions(input.text);
  const mentioned = parsed.identityIds.length
    ? (await tx
        .select({ id: identities.id })
        .from(identities)
        .where(and(eq(identities.accountId, actor.accountId), inArray(identities.id, parsed.identityIds)))).map((r) => r.id)
    : [];
  // Keep the order of first appearance in the text.
  const mentions = parsed.identityIds.filter((id) => mentioned.includes(id));

  const allocated = await allocateTs(tx, { accountId: actor.accountId, channelId: input.channelId, identityId: actor.identityId });
  if (!allocated) throw await explainNoAccess(tx, actor, input.channelId);
  const { tsMicros, kind } = allocated;

  let parent: { tsMicros: bigint; author: string } | null = null;
  if (input.threadTsMicros !== undefined) {
    const t = input.threadTsMicros;
    const result = await tx.execute<{ ts_micros: string; author_identity_id: string }>(sql`
      UPDATE messages SET reply_count = reply_count + 1
       WHERE channel_id = ${input.channelId}
         AND ts_micros = COALESCE((SELECT thread_ts_micros FROM messages WHERE channel_id = ${input.channelId} AND ts_micros = ${t.toString()}::bigint), ${t.toString()}::bigint)
         AND thread_ts_micros IS NULL
   RETURNING ts_micros::text AS ts_micros, author_identity_id`);
    const row = result.rows[0];
    if (!row) throw errors.invalid('thread_ts does not name a message in this channel.', { field: 'thread_ts' });
    parent = { tsMicros: BigInt(row.ts_micros), author: row.author_identity_id };
  }

  const [message] = await tx
    .insert(messages)
    .values({
      channelId: input.channelId,
      tsMicros,
      accountId: actor.accountId,
      authorIdentityId: actor.identityId,
      text: input.text,
      attachments: input.attachments ?? [],
      links: input.links ?? [],
      threadTsMicros: parent?.tsMicros ?? null,
      mentions,
      broadcast: parsed.broadcast !== null,
      clientRef: input.clientRef,
      session: input.session ?? null,
    })
    .returning();

  const dmOthers = kind === 'dm'
    ? (await tx
        .select({ id: channelMembers.identityId })
        .from(channelMembers)
        .where(and(eq(channelMembers.channelId, input.channelId), ne(channelMembers.identityId, actor.identityId)))).map((r) => r.id)
    : [];
  await recordEvents(tx, messagePostedEvents({ message, kind, parentAuthor: parent?.author ?? null, broadcast: parsed.broadcast, dmRecipients: dmOthers }));
  return message;
}
