import type { events } from '@teamchat/db';

/**
 * The spec's "Subscribable events", in its order. Every name here is a valid entry of an
 * endpoint's `events` array.
 */
export const EVENT_TYPES = [
  'message.posted',
  'message.edited',
  'message.deleted',
  'thread.replied',
  'mention',
  'dm.received',
  'channel.created',
  'channel.deleted',
  'reaction.added',
  'reaction.removed',
  'session.evicted',
  'test',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** Events about one message: they carry the channel, the message's ts, author, session and counts. */
export const MESSAGE_EVENT_TYPES = [
  'message.posted', 'message.edited', 'message.deleted', 'thread.replied',
  'mention', 'dm.received', 'reaction.added', 'reaction.removed',
] as const satisfies readonly EventType[];
export type MessageEventType = (typeof MESSAGE_EVENT_TYPES)[number];

/** Spec Events rule 1: subscribable, recorded, but never sent (yet). */
export const UNSENT_EVENT_TYPES = ['channel.created', 'channel.deleted', 'session.evicted'] as const satisfies readonly EventType[];

/** Types written as rows of the `events` outbox (a `test` event has no row). */
export type RowEventType = Exclude<EventType, 'test'>;

export type PayloadMode = 'pointers' | 'text';
export const PAYLOAD_MODES = ['pointers', 'text'] as const satisfies readonly PayloadMode[];

/** Spec Limits: "Text in `text` payload mode: up to 16 KB" (UTF-8 bytes). */
export const EVENT_TEXT_MAX_BYTES = 16 * 1024;

export const isEventType = (v: string): v is EventType => (EVENT_TYPES as readonly string[]).includes(v);
export const isMessageEventType = (v: string): v is MessageEventType => (MESSAGE_EVENT_TYPES as readonly string[]).includes(v);
/** False for the types spec Events rule 1 keeps unsent and for `test` (delivered directly, never fanned out). */
export const isFannedOutEventType = (v: string): boolean =>
  isEventType(v) && v !== 'test' && !(UNSENT_EVENT_TYPES as readonly string[]).includes(v);

export type EventRow = typeof events.$inferSelect;

/** Filled by the MCP server for posts made through one of its sessions; null otherwise. */
export interface MessageSession {
  client: string;
  version: string;
}

export interface ChannelRef {
  id: string;
  kind: 'channel' | 'dm';
}

/** The pointer fields every message event's row (and body) carries. Never text. */
export interface MessagePointers {
  channel: ChannelRef;
  ts: string;
  author: string;
  thread_ts: string | null;
  session: MessageSession | null;
  links_count: number;
  attachments_count: number;
}

/** Text-mode-only content, kept in the row under `content`; pointers mode never renders it. */
export interface MessageContent {
  text: string;
  links: string[];
}

type WithContent<T> = MessagePointers & T & { content: MessageContent };

/** The `data` column of an event row, per type. */
export interface EventDataByType {
  'message.posted': WithContent<{ mentions: string[]; broadcast: boolean }>;
  'message.edited': WithContent<{ version: number; edited_by: string }>;
  'message.deleted': MessagePointers & { deleted_by: string; approval_id?: string };
  'thread.replied': WithContent<{ parent_author: string }>;
  mention: WithContent<{ to: string } | { broadcast: true; broadcast_kind: 'channel' | 'here'; from: string }>;
  'dm.received': WithContent<{ to: string }>;
  'reaction.added': MessagePointers & { emoji: string; by: string };
  'reaction.removed': MessagePointers & { emoji: string; by: string };
  'channel.created': { channel: ChannelRef; by: string };
  'channel.deleted': { channel: ChannelRef; by: string };
  'session.evicted': {
    user_id: string; identity_id: string; credential_id: string; session: MessageSession;
    opened_at: string; last_used_at: string; reason: 'seat_session_cap'; cap: number;
  };
}

export type EventData = EventDataByType[RowEventType];

/** One outbox row to write: a discriminated union on `type`. */
export type EventInput = { [T in RowEventType]: { type: T; accountId: string; data: EventDataByType[T] } }[RowEventType];
