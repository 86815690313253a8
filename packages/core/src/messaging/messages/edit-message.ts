import { and, eq, identities, inArray, messageFiles, messages, sql, type Executor } from '@teamchat/db';
import { attachedFileIds, resolveAttachments } from '../../files/attachments';
import { AppError } from '../../errors';
import { isBlank } from '../../input-rules';
import type { Actor } from '../../principal';
import type { Attachment } from '../content';
import { editRaisesEvent, messageEditedEvent, recordEvent } from '../../events';
import { parseMentions } from '../mentions';
import type { MessageRow } from '../views';
import { assertMayChange, loadMessage } from './load';

/** Orders an object's keys so that JSON.stringify writes them the same way whatever order they came in. */
const sortedKeys = (_key: string, value: unknown) =>
  value !== null && typeof value === 'object' && !Array.isArray(value)
    ? Object.fromEntries(Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
    : value;

/**
 * Whether two attachment (or link) lists hold the same content. Object keys are compared in a fixed
 * order because PostgreSQL's jsonb reads them back in its own order (shorter keys first), not in the
 * order a client sent them or resolveAttachments built them: re-sending what GET returned is no
 * change. The order of the list itself stays significant (reordering attachments is an edit).
 */
const sameContent = (a: unknown, b: unknown) => JSON.stringify(a, sortedKeys) === JSON.stringify(b, sortedKeys);

/**
 * Edits a message's text, attachments or links (author or owner/admin). `expectedVersion`
 * (If-Match or body `version`) that no longer matches → 409 edit_conflict. A real change bumps
 * `version` and re-parses mentions (no new mention events); message.edited is raised only when the
 * text or the attachments changed (spec Events: a links-only edit raises none). A PATCH that
 * changes nothing returns the message as it is; attachments count as unchanged when their content
 * is, whatever the order of their keys (so re-sending what GET returned is no edit).
 */
export async function editMessage(
  tx: Executor,
  input: {
    actor: Actor; channelId: string; tsMicros: bigint; expectedVersion?: number;
    text?: string; attachments?: Attachment[]; links?: string[];
  },
): Promise<MessageRow> {
  const { actor } = input;
  const { channel, message } = await loadMessage(tx, { ...input, forUpdate: true });
  assertMayChange(actor, message, 'edit');
  if (input.expectedVersion !== undefined && input.expectedVersion !== message.version) {
    throw new AppError('edit_conflict', 'The message changed since you read it; read it again before editing.', { current_version: message.version });
  }
  const next = {
    text: input.text ?? message.text,
    attachments: (await resolveAttachments(tx, actor, input.attachments)) ?? (message.attachments as Attachment[]),
    links: input.links ?? (message.links as string[]),
  };
  const attachmentsChanged = !sameContent(next.attachments, message.attachments);
  if (next.text === message.text && !attachmentsChanged && sameContent(next.links, message.links)) return message;
  if (isBlank(next.text) && next.attachments.length === 0) {
    throw new AppError('invalid_request', 'A message needs text or at least one attachment.', { field: 'text' });
  }
  const changes: Partial<MessageRow> = { text: next.text, attachments: next.attachments, links: next.links };
  if (next.text !== message.text) {
    const parsed = parseMentions(next.text);
    const known = parsed.identityIds.length
      ? (await tx.select({ id: identities.id }).from(identities)
          .where(and(eq(identities.accountId, actor.accountId), inArray(identities.id, parsed.identityIds)))).map((r) => r.id)
      : [];
    changes.mentions = parsed.identityIds.filter((id) => known.includes(id));
    changes.broadcast = parsed.broadcast !== null;
  }
  const [row] = await tx
    .update(messages)
    .set({ ...changes, version: sql`${messages.version} + 1`, editedAt: sql`now()` })
    .where(and(eq(messages.channelId, message.channelId), eq(messages.tsMicros, message.tsMicros)))
    .returning();
  if (attachmentsChanged) {
    // which files the message attaches (message_files: who may see a file follows it)
    await tx.delete(messageFiles).where(and(eq(messageFiles.channelId, row.channelId), eq(messageFiles.tsMicros, row.tsMicros)));
    const ids = attachedFileIds(row.attachments);
    if (ids.length) {
      await tx.insert(messageFiles).values(ids.map((fileId) => ({ channelId: row.channelId, tsMicros: row.tsMicros, fileId, accountId: row.accountId })));
    }
  }
  if (editRaisesEvent(message, row)) {
    await recordEvent(tx, messageEditedEvent({ message: row, kind: channel.kind, editedBy: actor.identityId }));
  }
  return row;
}
