import type { EventRow } from './types';
import { isFannedOutEventType } from './types';

/** What fan-out knows of an endpoint: its filters (enabled/enabled_at are fan-out's own checks). */
export interface EndpointFilter {
  events: readonly string[];
  channels: 'all' | readonly string[];
}

export type RoutableEvent = Pick<EventRow, 'type' | 'channelId' | 'data'>;

function channelKind(event: RoutableEvent): 'channel' | 'dm' | null {
  const ch = (event.data as { channel?: { kind?: string } } | null)?.channel;
  if (!ch) return null;
  return ch.kind === 'dm' ? 'dm' : 'channel';
}

/**
 * The one fan-out rule (docs/webhooks.md "Which endpoints an event reaches"):
 * 1. the endpoint subscribes to the type, and the type is sent at all (spec Events rule 1: not
 *    channel.created, channel.deleted, session.evicted; `test` is delivered directly, never fanned out);
 * 2. every event in a direct message (posts, dm.received, mentions, replies, edits, deletes,
 *    reactions) reaches only endpoints covering `all` channels: a DM is not a channel an endpoint
 *    can list, and spec Events rule 2 says so for edits, deletes and reactions;
 * 3. an event in a channel reaches `all` endpoints and those listing that channel's id;
 * 4. an event with no channel reaches every subscribed endpoint.
 */
export function eventReachesEndpoint(event: RoutableEvent, endpoint: EndpointFilter): boolean {
  if (!isFannedOutEventType(event.type)) return false;
  if (!endpoint.events.includes(event.type)) return false;
  const kind = channelKind(event);
  if (kind === null && !event.channelId) return true;
  if (endpoint.channels === 'all') return true;
  if (kind === 'dm') return false;
  const channelId = event.channelId ?? (event.data as { channel: { id: string } }).channel.id;
  return endpoint.channels.includes(channelId);
}
