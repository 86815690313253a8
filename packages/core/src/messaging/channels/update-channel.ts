import { and, channels, eq, ne, sql, type Executor } from '@teamchat/db';
import { recordAudit } from '../../audit';
import { AppError, errors } from '../../errors';
import type { Actor } from '../../principal';
import { loadChannel, type ChannelRow } from '../access';

/**
 * Renames a channel or changes its topic. Any member may (owners/admins too). `expectedVersion`
 * comes from If-Match; if it no longer matches, 412 stale. Bumps `version`.
 */
export async function updateChannel(
  tx: Executor,
  input: { actor: Actor; channelId: string; name?: string; topic?: string; expectedVersion?: number },
): Promise<ChannelRow> {
  const { actor } = input;
  const { channel } = await loadChannel(tx, actor, input.channelId, 'meta', { forUpdate: true });
  if (channel.kind === 'dm') throw new AppError('forbidden', 'A direct message has no name or topic to change.', { reason: 'dm' });
  if (input.expectedVersion !== undefined && input.expectedVersion !== channel.version) {
    throw new AppError('stale', 'The channel changed since it was read; read it again.', { current_version: channel.version });
  }
  const changes: Partial<ChannelRow> = {};
  if (input.name !== undefined) changes.name = input.name;
  if (input.topic !== undefined) changes.topic = input.topic;
  if (input.name !== undefined && input.name !== channel.name) {
    const [taken] = await tx
      .select({ id: channels.id })
      .from(channels)
      .where(and(eq(channels.accountId, actor.accountId), eq(channels.kind, 'channel'), ne(channels.id, channel.id), eq(sql`lower(${channels.name})`, input.name.toLowerCase())));
    if (taken) throw errors.taken(`A channel named ${input.name} already exists.`, 'name_taken', 'name');
  }
  const [row] = await tx
    .update(channels)
    .set({ ...changes, version: sql`${channels.version} + 1`, updatedAt: sql`now()` })
    .where(eq(channels.id, channel.id))
    .returning();
  await recordAudit(tx, {
    accountId: actor.accountId, action: 'channel.updated', actor, targetType: 'channel', targetId: channel.id,
    data: { from: { name: channel.name, topic: channel.topic }, to: { name: row.name, topic: row.topic } },
  });
  return row;
}
