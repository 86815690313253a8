import { and, asc, eq, inArray, messages, reactions, type Executor } from '@teamchat/db';
import { AppError, errors } from '../../errors';
import type { Actor } from '../../principal';
import { isManager } from '../../scopes';
import { loadChannel, type ChannelRow } from '../access';
import type { MessageRow, ReactionSummary } from '../views';

/** A message of a channel the actor is a member of; `forUpdate` locks the message row. */
export async function loadMessage(
  db: Executor,
  input: { actor: Actor; channelId: string; tsMicros: bigint; forUpdate?: boolean },
): Promise<{ channel: ChannelRow; message: MessageRow }> {
  const { channel } = await loadChannel(db, input.actor, input.channelId, 'member');
  const query = db.select().from(messages).where(and(eq(messages.channelId, channel.id), eq(messages.tsMicros, input.tsMicros)));
  const [message] = input.forUpdate ? await query.for('update') : await query;
  if (!message) throw errors.notFound('message');
  return { channel, message };
}

/** Only the author, or an owner/admin of the account, may change or delete a message. */
export function assertMayChange(actor: Actor, message: MessageRow, what: 'edit' | 'delete'): void {
  if (message.authorIdentityId === actor.identityId || isManager(actor.role)) return;
  throw new AppError('forbidden', `Only the author or an owner/admin may ${what} this message.`, { reason: 'not_author' });
}

/** Reactions of the given messages of one channel, grouped per message and emoji (first reaction first). */
export async function reactionsOf(db: Executor, channelId: string, tsList: bigint[]): Promise<Map<bigint, ReactionSummary[]>> {
  const out = new Map<bigint, ReactionSummary[]>();
  if (tsList.length === 0) return out;
  const rows = await db
    .select()
    .from(reactions)
    .where(and(eq(reactions.channelId, channelId), inArray(reactions.tsMicros, tsList)))
    .orderBy(asc(reactions.createdAt));
  for (const r of rows) {
    const list = out.get(r.tsMicros) ?? [];
    let entry = list.find((e) => e.emoji === r.emoji);
    if (!entry) {
      entry = { emoji: r.emoji, count: 0, by: [] };
      list.push(entry);
    }
    entry.count += 1;
    entry.by.push(r.identityId);
    out.set(r.tsMicros, list);
  }
  return out;
}
