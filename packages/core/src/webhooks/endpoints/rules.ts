import { EVENT_TYPES } from '../../events/types';
/**
 * The subscribable event names: the spec's table "Subscribable events", owned by the events module.
 * `test` is listed there, so it is accepted, though a test event reaches an endpoint whatever it
 * subscribes to; `channel.created`, `channel.deleted` and `session.evicted` may be subscribed to
 * but are not sent yet (rule 1).
 */
export const SUBSCRIBABLE_EVENTS = EVENT_TYPES;
export type SubscribableEvent = (typeof SUBSCRIBABLE_EVENTS)[number];

export const ENDPOINT_PAYLOAD_MODES = ['pointers', 'text'] as const;
export type EndpointPayloadMode = (typeof ENDPOINT_PAYLOAD_MODES)[number];

/** Why an endpoint is disabled (spec: Webhook endpoint enablement). */
export const DISABLED_REASONS = ['awaiting_enable', 'failing', 'gone', 'slow', 'manual'] as const;
export type DisabledReason = (typeof DISABLED_REASONS)[number];

/** The old secret keeps signing alongside the new one this long after a rotation (spec: Limits). */
export const ROTATION_OVERLAP_MS = 24 * 60 * 60 * 1000;

/** Bounds of the register/change payload (docs/webhooks.md, Endpoints). */
export const ENDPOINT_LIMITS = {
  urlMaxLength: 2048,
  maxEvents: SUBSCRIBABLE_EVENTS.length,
  maxChannels: 500,
  authorizationMaxLength: 2048,
} as const;

/** `all`, or a list of channel ids. */
export type ChannelsFilter = 'all' | string[];

/** What a register or PATCH body carries, after validation at the edge. */
export interface EndpointFields {
  url?: string;
  events?: string[];
  channels?: ChannelsFilter;
  payload?: EndpointPayloadMode;
  enabled?: boolean;
  /** a string sets the custom header's value; null clears it */
  authorization?: string | null;
}
