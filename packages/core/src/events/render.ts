import {
  EVENT_TEXT_MAX_BYTES, isMessageEventType,
  type EventRow, type MessageContent, type MessagePointers, type PayloadMode,
} from './types';

/**
 * The delivery body of an event (docs/webhooks.md "Event bodies"). Pure: the same row and mode
 * always give the same bytes, so the body is rendered once, stored, and every retry and replay
 * sends exactly those bytes.
 */

/** The fields every body starts with (spec: Event body). */
export interface EventBodyCommon {
  id: string;
  type: string;
  account_id: string;
  /** ISO 8601, UTC, milliseconds */
  created_at: string;
}

export type EventBody = EventBodyCommon & Record<string, unknown>;

/** What a body is rendered from: an `events` row (only these columns are read). */
export type RenderableEvent = Pick<EventRow, 'id' | 'type' | 'accountId' | 'createdAt' | 'data'>;

/** Types whose text-mode body carries the message's text and links (never message.deleted nor reactions). */
const TEXT_TYPES: ReadonlySet<string> = new Set(['message.posted', 'message.edited', 'thread.replied', 'mention', 'dm.received']);

/**
 * `text` cut to at most `maxBytes` of UTF-8 without splitting a character. Returns the text
 * unchanged (and truncated: false) when it fits.
 */
export function truncateUtf8(text: string, maxBytes: number): { text: string; truncated: boolean } {
  const buf = Buffer.from(text, 'utf8');
  if (buf.length <= maxBytes) return { text, truncated: false };
  let end = maxBytes;
  // Step back over continuation bytes (10xxxxxx) so the cut falls on a character boundary.
  while (end > 0 && (buf[end] & 0xc0) === 0x80) end--;
  return { text: buf.subarray(0, end).toString('utf8'), truncated: true };
}

type Data = Record<string, unknown>;

/*
 * The body is built by assigning its fields in wire order into one object: spreading four
 * partial objects into one cost ~10 µs per body (V8's slow path for every spread after the
 * first), about 5 % of a delivery's worker CPU.
 */

function addMessageFields(body: Data, d: Data): void {
  const p = d as Partial<MessagePointers>;
  body.channel = p.channel;
  body.ts = p.ts;
  body.author = p.author;
  body.thread_ts = p.thread_ts ?? null;
}

function addMessageTail(body: Data, d: Data): void {
  const p = d as Partial<MessagePointers>;
  body.session = p.session ?? null;
  body.links_count = p.links_count ?? 0;
  body.attachments_count = p.attachments_count ?? 0;
}

/** The fields each type adds after the message's pointers (or, for other types, after the common ones). */
function addTypeFields(body: Data, type: string, d: Data): void {
  switch (type) {
    case 'message.posted':
      body.mentions = d.mentions ?? [];
      body.broadcast = d.broadcast ?? false;
      return;
    case 'message.edited':
      body.version = d.version;
      body.edited_by = d.edited_by;
      return;
    case 'message.deleted':
      body.deleted_by = d.deleted_by;
      body.approval_id = d.approval_id ?? null;
      return;
    case 'thread.replied':
      body.parent_author = d.parent_author;
      return;
    case 'mention':
      if (d.broadcast === true) {
        body.broadcast = true;
        body.broadcast_kind = d.broadcast_kind;
        body.from = d.from;
      } else {
        body.broadcast = false;
        body.to = d.to;
      }
      return;
    case 'dm.received':
      body.to = d.to;
      return;
    case 'reaction.added':
    case 'reaction.removed':
      body.emoji = d.emoji;
      body.by = d.by;
      return;
    default:
      // channel.*, session.evicted (recorded, not sent) and any later type: the row's pointers, never content.
      for (const key of Object.keys(d)) if (key !== 'content') body[key] = d[key];
  }
}

/** The body as an object (key order is the wire order). */
export function eventBody(event: RenderableEvent, mode: PayloadMode): EventBody {
  if (mode !== 'pointers' && mode !== 'text') throw new Error(`unknown payload mode: ${String(mode)}`);
  const d = (event.data ?? {}) as Data;
  const body: EventBody = {
    id: event.id,
    type: event.type,
    account_id: event.accountId,
    created_at: event.createdAt.toISOString(),
  };
  if (!isMessageEventType(event.type)) {
    addTypeFields(body, event.type, d);
    return body;
  }
  addMessageFields(body, d);
  addTypeFields(body, event.type, d);
  addMessageTail(body, d);
  const content = d.content as MessageContent | undefined;
  if (mode === 'text' && TEXT_TYPES.has(event.type) && content) {
    const { text, truncated } = truncateUtf8(content.text, EVENT_TEXT_MAX_BYTES);
    body.text = text;
    if (truncated) body.text_truncated = true;
    body.links = content.links;
  }
  return body;
}

/** The exact bytes to store and send for an event row in one payload mode. */
export function renderEventBody(event: RenderableEvent, mode: PayloadMode): string {
  return JSON.stringify(eventBody(event, mode));
}

/** A `test` event (Send test event, or enabling an endpoint): it has no outbox row. */
export interface TestEventInput {
  /** a new `evt_` id (newId('event')) */
  id: string;
  accountId: string;
  endpointId: string;
  createdAt: Date;
}

export function testEventBody(input: TestEventInput): EventBody {
  return {
    id: input.id,
    type: 'test',
    account_id: input.accountId,
    created_at: input.createdAt.toISOString(),
    endpoint_id: input.endpointId,
  };
}

/** The exact bytes of a `test` event; identical in both payload modes. */
export function renderTestEventBody(input: TestEventInput): string {
  return JSON.stringify(testEventBody(input));
}
