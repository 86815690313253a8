import { events, type Executor } from '@teamchat/db';
import { newId } from '../ids';

/** The spec's "Subscribable events" this domain raises. */
export type EventType =
  | 'message.posted'
  | 'message.edited'
  | 'message.deleted'
  | 'thread.replied'
  | 'mention'
  | 'dm.received'
  | 'channel.created'
  | 'reaction.added'
  | 'reaction.removed';

export interface ChannelRef {
  id: string;
  kind: 'channel' | 'dm';
}

/**
 * The event row's `data`: what the delivery body needs beyond id/type/account_id/created_at.
 * Pointer fields sit at the top level; `content` (text and links) is only for `text`-mode
 * rendering and is never written for message.deleted or reactions.
 */
export interface EventData {
  channel: ChannelRef;
  ts?: string;
  author?: string;
  [field: string]: unknown;
  content?: { text: string; links: string[] };
}

export interface EventInput {
  type: EventType;
  accountId: string;
  data: EventData;
}

/**
 * The outbox writer: inserts the events in the caller's transaction, so they exist exactly
 * when the change does (a rolled-back write leaves none). Returns the event ids.
 */
export async function recordEvents(tx: Executor, inputs: EventInput[]): Promise<string[]> {
  if (inputs.length === 0) return [];
  const rows = inputs.map((e) => ({
    id: newId('event'),
    accountId: e.accountId,
    type: e.type,
    channelId: e.data.channel.id,
    data: e.data,
  }));
  await tx.insert(events).values(rows);
  return rows.map((r) => r.id);
}

export async function recordEvent(tx: Executor, input: EventInput): Promise<string> {
  const [id] = await recordEvents(tx, [input]);
  return id;
}
