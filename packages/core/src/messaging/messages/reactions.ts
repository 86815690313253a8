import { and, eq, reactions, type Executor } from '@teamchat/db';
import type { Actor } from '../../principal';
import { reactionEvent, recordEvent } from '../../events';
import { loadMessage } from './load';

interface ReactionInput {
  actor: Actor;
  channelId: string;
  tsMicros: bigint;
  emoji: string;
}

/** PUT a reaction: idempotent; reaction.added only when it is new. */
export async function addReaction(tx: Executor, input: ReactionInput): Promise<{ added: boolean }> {
  const { channel, message } = await loadMessage(tx, input);
  const inserted = await tx
    .insert(reactions)
    .values({ channelId: channel.id, tsMicros: message.tsMicros, emoji: input.emoji, identityId: input.actor.identityId })
    .onConflictDoNothing()
    .returning();
  if (inserted.length) {
    await recordEvent(tx, reactionEvent({ type: 'reaction.added', message, kind: channel.kind, emoji: input.emoji, by: input.actor.identityId }));
  }
  return { added: inserted.length > 0 };
}

/** DELETE a reaction: idempotent; reaction.removed only when one was there. */
export async function removeReaction(tx: Executor, input: ReactionInput): Promise<{ removed: boolean }> {
  const { channel, message } = await loadMessage(tx, input);
  const removed = await tx
    .delete(reactions)
    .where(and(
      eq(reactions.channelId, channel.id), eq(reactions.tsMicros, message.tsMicros),
      eq(reactions.emoji, input.emoji), eq(reactions.identityId, input.actor.identityId),
    ))
    .returning();
  if (removed.length) {
    await recordEvent(tx, reactionEvent({ type: 'reaction.removed', message, kind: channel.kind, emoji: input.emoji, by: input.actor.identityId }));
  }
  return { removed: removed.length > 0 };
}
