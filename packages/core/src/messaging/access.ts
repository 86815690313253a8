import { and, channelMembers, channels, eq, sql, type Executor } from '@teamchat/db';
import { errors } from '../errors';
import type { Actor } from '../principal';
import { isManager } from '../scopes';

export type ChannelRow = typeof channels.$inferSelect;

/**
 * What the caller needs:
 * - `member`: reading or writing messages, reacting: channel membership (403 not_a_member).
 * - `meta`: a channel's name, topic and members: membership, or an owner/admin for a regular
 *   channel (so they can find a channel and add themselves).
 * A DM is visible only to its members: to anyone else it does not exist (404).
 */
export type ChannelNeed = 'member' | 'meta';

export async function isChannelMember(db: Executor, channelId: string, identityId: string): Promise<boolean> {
  const [row] = await db
    .select({ one: sql<number>`1` })
    .from(channelMembers)
    .where(and(eq(channelMembers.channelId, channelId), eq(channelMembers.identityId, identityId)));
  return Boolean(row);
}

/** Loads a channel of the actor's account and checks access; `forUpdate` locks the row. */
export async function loadChannel(
  db: Executor,
  actor: Actor,
  channelId: string,
  need: ChannelNeed,
  options: { forUpdate?: boolean } = {},
): Promise<{ channel: ChannelRow; member: boolean }> {
  const query = db.select().from(channels).where(and(eq(channels.id, channelId), eq(channels.accountId, actor.accountId)));
  const [channel] = options.forUpdate ? await query.for('update') : await query;
  if (!channel) throw errors.notFound('channel');
  const member = await isChannelMember(db, channelId, actor.identityId);
  if (member) return { channel, member };
  if (channel.kind === 'dm') throw errors.notFound('channel');
  if (need === 'meta' && isManager(actor.role)) return { channel, member };
  throw errors.notAMember('channel');
}
