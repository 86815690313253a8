import type { events } from '@teamchat/db';

/**
 * LOCAL STAND-IN until the event-body module ("Event bodies:" commit) is in main: then
 * `renderEventBody` and `eventReachesEndpoint` come from there and this file goes.
 */
export type EventRow = typeof events.$inferSelect;
export type PayloadMode = 'pointers' | 'text';

/** Types that may be subscribed to but are not sent (spec: Events rule 1); `test` is never fanned out. */
const NOT_SENT = new Set(['channel.created', 'channel.deleted', 'session.evicted', 'test']);
/** Spec: Events rule 2: in a DM these reach only endpoints that cover all channels. */
const DM_ALL_CHANNELS_ONLY = new Set(['message.edited', 'message.deleted', 'reaction.added', 'reaction.removed']);

export function renderEventBody(event: EventRow, mode: PayloadMode): string {
  const { content, ...pointers } = event.data as { content?: { text: string; links: string[] } } & Record<string, unknown>;
  const body: Record<string, unknown> = { id: event.id, type: event.type, account_id: event.accountId, created_at: event.createdAt.toISOString(), ...pointers };
  if (mode === 'text' && content) Object.assign(body, { text: content.text, links: content.links });
  return JSON.stringify(body);
}

export interface EndpointFilter {
  events: string[];
  allChannels: boolean;
  channelIds: string[];
}

export function eventReachesEndpoint(event: Pick<EventRow, 'type' | 'channelId' | 'data'>, endpoint: EndpointFilter): boolean {
  if (NOT_SENT.has(event.type) || !endpoint.events.includes(event.type)) return false;
  if (endpoint.allChannels) return true;
  const kind = (event.data as { channel?: { kind?: string } }).channel?.kind;
  if (kind === 'dm' && DM_ALL_CHANNELS_ONLY.has(event.type)) return false;
  return event.channelId !== null && endpoint.channelIds.includes(event.channelId);
}
