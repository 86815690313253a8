import { mentionEventRecipients } from '../messaging/mentions';
import { formatTs } from '../messaging/ts';
import type { MessageRow } from '../messaging/views';
import type {
  ChannelRef, EventDataByType, EventInput, MessageContent, MessagePointers, MessageSession,
} from './types';

/**
 * The row `data` builders: the one place that decides what each event row holds. Use cases call
 * these and hand the result to recordEvents in their transaction.
 */

type Kind = ChannelRef['kind'];
const asKind = (kind: string): Kind => (kind === 'dm' ? 'dm' : 'channel');

/** The pointer fields every message event carries (spec Payload modes: pointers). */
export function messagePointers(m: MessageRow, kind: string): MessagePointers {
  return {
    channel: { id: m.channelId, kind: asKind(kind) },
    ts: formatTs(m.tsMicros),
    author: m.authorIdentityId,
    thread_ts: m.threadTsMicros === null ? null : formatTs(m.threadTsMicros),
    session: (m.session as MessageSession | null) ?? null,
    links_count: (m.links as unknown[]).length,
    attachments_count: (m.attachments as unknown[]).length,
  };
}

/** Text-mode-only content: the text exactly as posted and the attached links. */
export function messageContent(m: MessageRow): MessageContent {
  return { text: m.text, links: m.links as string[] };
}

/**
 * The rows of one post, in order: exactly one message.posted; thread.replied for a reply; one
 * mention per mentioned identity other than the author; one broadcast mention; dm.received per
 * other DM member.
 */
export function messagePostedEvents(input: {
  message: MessageRow;
  kind: string;
  /** author of the thread's root, for a reply */
  parentAuthor: string | null;
  broadcast: 'channel' | 'here' | null;
  /** the DM's other members (empty outside a DM) */
  dmRecipients: string[];
}): EventInput[] {
  const m = input.message;
  const base = messagePointers(m, input.kind);
  const content = messageContent(m);
  const accountId = m.accountId;
  const out: EventInput[] = [
    { type: 'message.posted', accountId, data: { ...base, mentions: m.mentions, broadcast: m.broadcast, content } },
  ];
  if (m.threadTsMicros !== null && input.parentAuthor !== null) {
    out.push({ type: 'thread.replied', accountId, data: { ...base, parent_author: input.parentAuthor, content } });
  }
  for (const to of mentionEventRecipients(m.mentions, m.authorIdentityId)) {
    out.push({ type: 'mention', accountId, data: { ...base, to, content } });
  }
  if (input.broadcast) {
    out.push({ type: 'mention', accountId, data: { ...base, broadcast: true, broadcast_kind: input.broadcast, from: m.authorIdentityId, content } });
  }
  for (const to of input.dmRecipients) out.push({ type: 'dm.received', accountId, data: { ...base, to, content } });
  return out;
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/** Spec: message.edited fires when a message's text or attachments change (a links-only edit raises none). */
export function editRaisesEvent(before: Pick<MessageRow, 'text' | 'attachments'>, after: Pick<MessageRow, 'text' | 'attachments'>): boolean {
  return before.text !== after.text || !same(before.attachments, after.attachments);
}

/** message.edited for the message as it is after the edit (its new text in text mode). */
export function messageEditedEvent(input: { message: MessageRow; kind: string; editedBy: string }): EventInput {
  const m = input.message;
  return {
    type: 'message.edited',
    accountId: m.accountId,
    data: { ...messagePointers(m, input.kind), version: m.version, edited_by: input.editedBy, content: messageContent(m) },
  };
}

/** message.deleted: the pointers of the message as it was; never text. */
export function messageDeletedEvent(input: { message: MessageRow; kind: string; deletedBy: string; approvalId?: string }): EventInput {
  const m = input.message;
  return {
    type: 'message.deleted',
    accountId: m.accountId,
    data: { ...messagePointers(m, input.kind), deleted_by: input.deletedBy, ...(input.approvalId ? { approval_id: input.approvalId } : {}) },
  };
}

/** reaction.added / reaction.removed: the message's pointers plus emoji and by; never text. */
export function reactionEvent(input: {
  type: 'reaction.added' | 'reaction.removed'; message: MessageRow; kind: string; emoji: string; by: string;
}): EventInput {
  const data: EventDataByType['reaction.added'] = { ...messagePointers(input.message, input.kind), emoji: input.emoji, by: input.by };
  return { type: input.type, accountId: input.message.accountId, data };
}

/** channel.created (recorded, not sent: spec Events rule 1). */
export function channelCreatedEvent(input: { accountId: string; channelId: string; by: string }): EventInput {
  return { type: 'channel.created', accountId: input.accountId, data: { channel: { id: input.channelId, kind: 'channel' }, by: input.by } };
}

/** channel.deleted (recorded, not sent: spec Events rule 1). Nothing deletes channels yet. */
export function channelDeletedEvent(input: { accountId: string; channelId: string; by: string }): EventInput {
  return { type: 'channel.deleted', accountId: input.accountId, data: { channel: { id: input.channelId, kind: 'channel' }, by: input.by } };
}

/**
 * session.evicted (recorded, not sent: spec Events rule 1): a seat's MCP session cap evicted its
 * least recently used session. Not about a channel, so the row's `channel_id` is null.
 */
export function sessionEvictedEvent(input: {
  accountId: string;
  /** the seat whose cap was reached */
  userId: string;
  /** the evicted session: who it acted as, through which credential, from which client */
  identityId: string;
  credentialId: string;
  session: MessageSession;
  openedAt: Date;
  lastUsedAt: Date;
  /** the seat's cap that was reached */
  cap: number;
}): EventInput {
  return {
    type: 'session.evicted',
    accountId: input.accountId,
    data: {
      user_id: input.userId, identity_id: input.identityId, credential_id: input.credentialId, session: input.session,
      opened_at: input.openedAt.toISOString(), last_used_at: input.lastUsedAt.toISOString(), reason: 'seat_session_cap', cap: input.cap,
    },
  };
}
