import { channelMembers, channels, type Executor } from '@teamchat/db';
import { recordAudit } from '../../audit';
import { errors } from '../../errors';
import { newId } from '../../ids';
import type { Actor } from '../../principal';
import type { ChannelRow } from '../access';
import { channelCreatedEvent, recordEvent } from '../../events';

/** Creates a channel; its creator becomes its first member; raises channel.created. */
export async function createChannel(
  tx: Executor,
  input: { actor: Actor; name: string; topic?: string; clientRef?: string },
): Promise<ChannelRow> {
  const { actor } = input;
  const [row] = await tx
    .insert(channels)
    .values({
      id: newId('channel'),
      accountId: actor.accountId,
      kind: 'channel',
      name: input.name,
      topic: input.topic ?? '',
      clientRef: input.clientRef,
      createdByIdentityId: actor.identityId,
    })
    // The only conflict possible is the per-account unique name.
    .onConflictDoNothing()
    .returning();
  if (!row) throw errors.taken(`A channel named ${input.name} already exists.`, 'name_taken', 'name');
  await tx.insert(channelMembers).values({ channelId: row.id, identityId: actor.identityId, accountId: actor.accountId });
  await recordEvent(tx, channelCreatedEvent({ accountId: actor.accountId, channelId: row.id, by: actor.identityId }));
  await recordAudit(tx, { accountId: actor.accountId, action: 'channel.created', actor, targetType: 'channel', targetId: row.id, data: { name: row.name } });
  return row;
}
