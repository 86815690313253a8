import { and, eq, messages, reactions, sql, type Executor } from '@teamchat/db';
import { recordAudit } from '../../audit';
import type { Actor } from '../../principal';
import { isWebSession } from '../../principal';
import { requestApproval } from '../approvals/request-approval';
import type { ChannelRow } from '../access';
import { messageDeletedEvent, recordEvent } from '../../events';
import { formatTs } from '../ts';
import type { ApprovalRow, MessageRow } from '../views';
import { assertMayChange, loadMessage } from './load';

/**
 * Deletes a message for good, with its reactions; a reply also lowers its thread's reply
 * count (deleting a thread root leaves its replies readable through the thread). Raises
 * message.deleted, which never carries text. The caller holds the message row's lock.
 */
export async function performMessageDelete(
  tx: Executor,
  input: { channel: ChannelRow; message: MessageRow; deletedBy: string; actor?: Actor; approvalId?: string },
): Promise<void> {
  const { channel, message: m } = input;
  await tx.delete(reactions).where(and(eq(reactions.channelId, m.channelId), eq(reactions.tsMicros, m.tsMicros)));
  await tx.delete(messages).where(and(eq(messages.channelId, m.channelId), eq(messages.tsMicros, m.tsMicros)));
  if (m.threadTsMicros !== null) {
    await tx
      .update(messages)
      .set({ replyCount: sql`GREATEST(${messages.replyCount} - 1, 0)` })
      .where(and(eq(messages.channelId, m.channelId), eq(messages.tsMicros, m.threadTsMicros)));
  }
  await recordEvent(tx, messageDeletedEvent({ message: m, kind: channel.kind, deletedBy: input.deletedBy, approvalId: input.approvalId }));
  await recordAudit(tx, {
    accountId: m.accountId, action: 'message.deleted', actor: input.actor, via: input.actor ? undefined : 'system',
    targetType: 'message', targetId: `${m.channelId}/${formatTs(m.tsMicros)}`,
    data: { author: m.authorIdentityId, deleted_by: input.deletedBy, approval_id: input.approvalId ?? null },
  });
}

/**
 * DELETE of a message (author or owner/admin). Through a web session it happens at once;
 * through a credential (API key, agent token) it becomes an approval a person must confirm
 * (spec: Authentication rule 10), and the caller answers 403 confirmation_required.
 */
export async function requestMessageDelete(
  tx: Executor,
  input: { actor: Actor; channelId: string; tsMicros: bigint; now: Date },
): Promise<{ deleted: true } | { deleted: false; approval: ApprovalRow }> {
  const { actor } = input;
  const { channel, message } = await loadMessage(tx, { ...input, forUpdate: true });
  assertMayChange(actor, message, 'delete');
  if (isWebSession(actor)) {
    await performMessageDelete(tx, { channel, message, deletedBy: actor.identityId, actor });
    return { deleted: true };
  }
  const approval = await requestApproval(tx, {
    actor,
    action: 'message.delete',
    target: { channel_id: channel.id, ts: formatTs(message.tsMicros) },
    summary: `Delete the message ${formatTs(message.tsMicros)} by ${message.authorIdentityId} in ${channel.kind === 'dm' ? 'a direct message' : `#${channel.name}`}.`,
    ownerIdentityId: message.authorIdentityId,
    now: input.now,
  });
  return { deleted: false, approval };
}
