import { and, eq, reactions, type Executor } from '@teamchat/db';
import type { Actor } from '../../principal';
import { recordEvent } from '../events';
import { formatTs } from '../ts';
import { loadMessage } from './load';

interface ReactionInput {
  actor: Actor;
  channelId: string;
  tsMicros: bigint;
  emoji: string;
}

function reactionEventData(channel: { id: string; kind: string }, m: { tsMicros: bigint; authorIdentityId: string }, emoji: string, by: string) {
  // Never text (spec: reaction events).
  return { channel: { id: channel.id, kind: channel.kind as 'channel' | 'dm' }, ts: formatTs(m.tsMicros), author: m.authorIdentityId, emoji, by };
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
    await recordEvent(tx, { type: 'reaction.added', accountId: input.actor.accountId, data: reactionEventData(channel, message, input.emoji, input.actor.identityId) });
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
    await recordEvent(tx, { type: 'reaction.removed', accountId: input.actor.accountId, data: reactionEventData(channel, message, input.emoji, input.actor.identityId) });
  }
  return { removed: removed.length > 0 };
}
