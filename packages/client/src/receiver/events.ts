/**
 * The bodies a webhook delivery carries, typed (docs/webhooks.md, "Event bodies"). Receivers
 * must ignore fields they do not know: new fields may be added (spec: Versioning).
 */
export interface EventBase<T extends string> {
  /** `evt_…`, the same on every retry and replay: dedupe on it */
  id: string;
  type: T;
  /** `acct_…` */
  account_id: string;
  /** ISO 8601 UTC with milliseconds */
  created_at: string;
}

export interface ChannelRef {
  id: string;
  kind: 'channel' | 'dm';
}

/** Fields every message event carries, in both payload modes. */
export interface MessageFields {
  channel: ChannelRef;
  /** the message's `ts` (`<unix seconds>.<6 digits>`) */
  ts: string;
  /** identity id (`idn_…`) of the message's author */
  author: string;
  thread_ts: string | null;
  session: { client: string; version: string } | null;
  links_count: number;
  attachments_count: number;
}

/** Added in `text` payload mode to the types that carry text. */
export interface TextFields {
  text?: string;
  /** present (true) only when the text was cut at 16 KB */
  text_truncated?: true;
  links?: string[];
}

export interface MessagePostedEvent extends EventBase<'message.posted'>, MessageFields, TextFields {
  mentions: string[];
  broadcast: boolean;
}

export interface MessageEditedEvent extends EventBase<'message.edited'>, MessageFields, TextFields {
  version: number;
  edited_by: string;
}

export interface MessageDeletedEvent extends EventBase<'message.deleted'>, MessageFields {
  deleted_by: string;
  approval_id: string | null;
}

export interface ThreadRepliedEvent extends EventBase<'thread.replied'>, MessageFields, TextFields {
  parent_author: string;
}

export interface PersonMentionEvent extends EventBase<'mention'>, MessageFields, TextFields {
  broadcast: false;
  /** the mentioned identity */
  to: string;
}

export interface BroadcastMentionEvent extends EventBase<'mention'>, MessageFields, TextFields {
  broadcast: true;
  broadcast_kind: 'channel' | 'here';
  from: string;
}

export type MentionEvent = PersonMentionEvent | BroadcastMentionEvent;

export interface DmReceivedEvent extends EventBase<'dm.received'>, MessageFields, TextFields {
  to: string;
}

export interface ReactionEvent<T extends 'reaction.added' | 'reaction.removed' = 'reaction.added' | 'reaction.removed'> extends EventBase<T>, MessageFields {
  /** Slack-style name, e.g. `white_check_mark` */
  emoji: string;
  by: string;
}

/** Sent by "Send test event" and when an endpoint is enabled. */
export interface TestEvent extends EventBase<'test'> {
  endpoint_id: string;
}

export type WebhookEvent =
  | MessagePostedEvent
  | MessageEditedEvent
  | MessageDeletedEvent
  | ThreadRepliedEvent
  | MentionEvent
  | DmReceivedEvent
  | ReactionEvent<'reaction.added'>
  | ReactionEvent<'reaction.removed'>
  | TestEvent;

export type WebhookEventType = WebhookEvent['type'];
