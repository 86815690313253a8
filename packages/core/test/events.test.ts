import fc from 'fast-check';
import {
  EVENT_TEXT_MAX_BYTES, EVENT_TYPES, MESSAGE_EVENT_TYPES, UNSENT_EVENT_TYPES,
  channelCreatedEvent, editRaisesEvent, eventBody, eventReachesEndpoint, messageDeletedEvent, messageEditedEvent,
  messagePostedEvents, reactionEvent, renderEventBody, renderTestEventBody, truncateUtf8,
  type EventInput, type MessageRow, type RenderableEvent,
} from '../src';

/** Pure tests of the events module (one module builds every body: docs/webhooks.md, "Module API"). */

const CREATED = new Date('2025-03-04T05:06:07.089Z');
const TEXT = 'deploy <@idn_bob> <!here> ✓ "quoted"\nsecond line';

function message(over: Partial<MessageRow> = {}): MessageRow {
  return {
    channelId: 'ch_1', tsMicros: 1741064767089000n, accountId: 'acct_1', authorIdentityId: 'idn_alice',
    text: TEXT, attachments: [{ url: 'https://f.example/a.png' }], links: ['https://a.example', 'https://b.example'],
    threadTsMicros: null, replyCount: 0, mentions: ['idn_bob'], broadcast: true, version: 1, clientRef: null,
    session: { client: 'claude-code', version: '1.2.3' }, createdAt: CREATED, editedAt: null, ...over,
  };
}

let n = 0;
const asRow = (e: EventInput): RenderableEvent => ({ id: `evt_${++n}`, type: e.type, accountId: e.accountId, createdAt: CREATED, data: e.data });

/** One row of every message event type, built by the module's own builders. */
function everyMessageEvent(): RenderableEvent[] {
  const reply = message({ threadTsMicros: 1741064700000000n });
  return [
    ...messagePostedEvents({ message: reply, kind: 'channel', parentAuthor: 'idn_carol', broadcast: 'here', dmRecipients: [] }),
    ...messagePostedEvents({ message: message({ channelId: 'ch_dm', mentions: [], broadcast: false }), kind: 'dm', parentAuthor: null, broadcast: null, dmRecipients: ['idn_bob'] }),
    messageEditedEvent({ message: message({ version: 2 }), kind: 'channel', editedBy: 'idn_alice' }),
    messageDeletedEvent({ message: message(), kind: 'channel', deletedBy: 'idn_alice' }),
    reactionEvent({ type: 'reaction.added', message: message(), kind: 'channel', emoji: 'tada', by: 'idn_bob' }),
    reactionEvent({ type: 'reaction.removed', message: message(), kind: 'channel', emoji: 'tada', by: 'idn_bob' }),
  ].map(asRow);
}

describe('event rows and bodies (spec Events, Payload modes)', () => {
  test('the builders cover every message event type, and each row carries session and both counts', () => {
    const rows = everyMessageEvent();
    expect(new Set(rows.map((r) => r.type))).toEqual(new Set(MESSAGE_EVENT_TYPES));
    for (const r of rows) {
      expect(r.data).toMatchObject({ session: { client: 'claude-code', version: '1.2.3' }, links_count: 2, attachments_count: 1 });
    }
  });

  test('every body starts with id (evt_), type, account_id, created_at (ISO), then the channel, ts and author', () => {
    for (const r of everyMessageEvent()) {
      for (const mode of ['pointers', 'text'] as const) {
        const body = JSON.parse(renderEventBody(r, mode));
        expect(Object.keys(body).slice(0, 7)).toEqual(['id', 'type', 'account_id', 'created_at', 'channel', 'ts', 'author']);
        expect(body).toMatchObject({ id: r.id, type: r.type, account_id: 'acct_1', created_at: '2025-03-04T05:06:07.089Z', author: 'idn_alice', ts: '1741064767.089000' });
        expect(body.id).toMatch(/^evt_/);
        expect(body).toMatchObject({ session: { client: 'claude-code', version: '1.2.3' }, links_count: 2, attachments_count: 1 });
      }
    }
  });

  test('each type\'s body has its fields in the documented wire order, in both modes (the stored bytes never change order)', () => {
    const head = ['id', 'type', 'account_id', 'created_at', 'channel', 'ts', 'author', 'thread_ts'];
    const tail = ['session', 'links_count', 'attachments_count'];
    const middle: Record<string, string[][]> = {
      'thread.replied': [['parent_author']],
      'message.posted': [['mentions', 'broadcast']],
      mention: [['broadcast', 'broadcast_kind', 'from'], ['broadcast', 'to']],
      'dm.received': [['to']],
      'message.edited': [['version', 'edited_by']],
      'message.deleted': [['deleted_by', 'approval_id']],
      'reaction.added': [['emoji', 'by']],
      'reaction.removed': [['emoji', 'by']],
    };
    const withText = new Set(['message.posted', 'message.edited', 'thread.replied', 'mention', 'dm.received']);
    for (const r of everyMessageEvent()) {
      for (const mode of ['pointers', 'text'] as const) {
        const keys = Object.keys(JSON.parse(renderEventBody(r, mode)));
        const extra = mode === 'text' && withText.has(r.type) ? ['text', 'links'] : [];
        expect(middle[r.type].map((m) => [...head, ...m, ...tail, ...extra])).toContainEqual(keys);
      }
    }
    const channel = asRow(channelCreatedEvent({ accountId: 'acct_1', channelId: 'ch_9', by: 'idn_alice' }));
    expect(Object.keys(JSON.parse(renderEventBody(channel, 'text')))).toEqual(['id', 'type', 'account_id', 'created_at', 'channel', 'by']);
  });

  test('pointers mode never carries text nor links, in any body (spec Payload modes)', () => {
    for (const r of everyMessageEvent()) {
      const raw = renderEventBody(r, 'pointers');
      expect(raw).not.toContain('deploy');
      expect(raw).not.toContain('https://a.example');
      expect(JSON.parse(raw)).not.toHaveProperty('text');
      expect(JSON.parse(raw)).not.toHaveProperty('links');
    }
  });

  test('text mode adds the text exactly as posted and the links; never to message.deleted nor reactions', () => {
    for (const r of everyMessageEvent()) {
      const body = eventBody(r, 'text');
      if (['message.deleted', 'reaction.added', 'reaction.removed'].includes(r.type)) {
        expect(JSON.stringify(body)).not.toContain('deploy');
        expect(body).not.toHaveProperty('links');
      } else {
        expect(body.text).toBe(TEXT);
        expect(body.links).toEqual(['https://a.example', 'https://b.example']);
        expect(body).not.toHaveProperty('text_truncated');
      }
    }
  });

  test('the extra fields of each type (spec Subscribable events)', () => {
    const rows = everyMessageEvent();
    const body = (type: string, i = 0) => eventBody(rows.filter((r) => r.type === type)[i], 'pointers');
    expect(body('thread.replied')).toMatchObject({ thread_ts: '1741064700.000000', parent_author: 'idn_carol' });
    expect(body('message.posted', 0)).toMatchObject({ thread_ts: '1741064700.000000', mentions: ['idn_bob'], broadcast: true });
    expect(body('mention', 0)).toMatchObject({ broadcast: false, to: 'idn_bob' });
    expect(body('mention', 1)).toMatchObject({ broadcast: true, broadcast_kind: 'here', from: 'idn_alice', channel: { id: 'ch_1', kind: 'channel' } });
    expect(body('mention', 1)).not.toHaveProperty('to');
    expect(body('dm.received')).toMatchObject({ to: 'idn_bob', channel: { id: 'ch_dm', kind: 'dm' } });
    expect(body('message.edited')).toMatchObject({ version: 2, edited_by: 'idn_alice' });
    expect(body('message.deleted')).toMatchObject({ deleted_by: 'idn_alice', approval_id: null });
    expect(body('reaction.added')).toMatchObject({ emoji: 'tada', by: 'idn_bob' });
    expect(body('reaction.removed')).toMatchObject({ emoji: 'tada', by: 'idn_bob' });
  });

  test('rendering is deterministic: the same row gives the same bytes (a replay sends the first body)', () => {
    for (const r of everyMessageEvent()) {
      const copy = JSON.parse(JSON.stringify({ ...r, createdAt: undefined })) as RenderableEvent;
      copy.createdAt = new Date(r.createdAt.getTime());
      expect(renderEventBody(copy, 'text')).toBe(renderEventBody(r, 'text'));
    }
  });

  test('text above 16 KB is cut at a UTF-8 character boundary and marked text_truncated: true', () => {
    const long = 'é'.repeat(EVENT_TEXT_MAX_BYTES); // 2 bytes each: twice the limit
    const [posted] = messagePostedEvents({ message: message({ text: long }), kind: 'channel', parentAuthor: null, broadcast: null, dmRecipients: [] });
    const body = eventBody(asRow(posted), 'text');
    expect(body.text_truncated).toBe(true);
    expect(Buffer.byteLength(body.text as string)).toBe(EVENT_TEXT_MAX_BYTES);
    expect(long.startsWith(body.text as string)).toBe(true);
    const exact = 'a'.repeat(EVENT_TEXT_MAX_BYTES);
    const [fits] = messagePostedEvents({ message: message({ text: exact }), kind: 'channel', parentAuthor: null, broadcast: null, dmRecipients: [] });
    expect(eventBody(asRow(fits), 'text')).toMatchObject({ text: exact });
    expect(eventBody(asRow(fits), 'text')).not.toHaveProperty('text_truncated');
  });

  test('truncateUtf8 never splits a character and keeps a prefix of at most the limit (property)', () => {
    fc.assert(fc.property(fc.string({ unit: 'grapheme', maxLength: 200 }), fc.integer({ min: 0, max: 600 }), (s, max) => {
      const { text, truncated } = truncateUtf8(s, max);
      const bytes = Buffer.byteLength(text);
      if (truncated) expect(bytes).toBeLessThanOrEqual(max);
      else expect(text).toBe(s);
      expect(s.startsWith(text)).toBe(true);
      expect(text.includes('\uFFFD')).toBe(s.includes('\uFFFD'));
      expect(truncated).toBe(Buffer.byteLength(s) > max);
      if (truncated) expect(bytes).toBeGreaterThan(max - 4);
    }));
  });

  test('the test event body: id, type test, account_id, created_at, endpoint_id; no text', () => {
    const raw = renderTestEventBody({ id: 'evt_t', accountId: 'acct_1', endpointId: 'whe_1', createdAt: CREATED });
    expect(raw).toBe('{"id":"evt_t","type":"test","account_id":"acct_1","created_at":"2025-03-04T05:06:07.089Z","endpoint_id":"whe_1"}');
  });

  test('channel.created renders its pointers (recorded, not sent: spec Events rule 1)', () => {
    const body = eventBody(asRow(channelCreatedEvent({ accountId: 'acct_1', channelId: 'ch_9', by: 'idn_alice' })), 'text');
    expect(body).toMatchObject({ type: 'channel.created', channel: { id: 'ch_9', kind: 'channel' }, by: 'idn_alice' });
  });

  test('message.edited is raised only when the text or the attachments change (a links-only edit raises none)', () => {
    const before = message();
    expect(editRaisesEvent(before, { ...before })).toBe(false);
    expect(editRaisesEvent(before, { text: 'other', attachments: before.attachments })).toBe(true);
    expect(editRaisesEvent(before, { text: before.text, attachments: [] })).toBe(true);
    expect(editRaisesEvent(before, message({ links: ['https://c.example'] }))).toBe(false);
  });
});

describe('eventReachesEndpoint: the one fan-out rule (spec Events rules 1-2; the DM rule in docs/webhooks.md)', () => {
  const inChannel = (type: string, channelId = 'ch_1') => ({ type, channelId, data: { channel: { id: channelId, kind: 'channel' } } });
  const inDm = (type: string) => ({ type, channelId: 'ch_dm', data: { channel: { id: 'ch_dm', kind: 'dm' } } });
  const all = { events: [...EVENT_TYPES], channels: 'all' as const };
  const listing = { events: [...EVENT_TYPES], channels: ['ch_1', 'ch_dm'] };

  test('the endpoint must subscribe to the type', () => {
    expect(eventReachesEndpoint(inChannel('message.posted'), { events: ['message.posted'], channels: 'all' })).toBe(true);
    expect(eventReachesEndpoint(inChannel('message.edited'), { events: ['message.posted'], channels: 'all' })).toBe(false);
  });

  test('channel events reach all-channel endpoints and those listing the channel', () => {
    for (const type of MESSAGE_EVENT_TYPES) {
      expect(eventReachesEndpoint(inChannel(type), all)).toBe(true);
      expect(eventReachesEndpoint(inChannel(type), listing)).toBe(true);
      expect(eventReachesEndpoint(inChannel(type, 'ch_2'), listing)).toBe(false);
      expect(eventReachesEndpoint(inChannel(type), { events: [...EVENT_TYPES], channels: [] })).toBe(false);
    }
  });

  test('every event in a DM (posted and dm.received too) reaches only endpoints covering all channels, even one listing the DM id', () => {
    for (const type of MESSAGE_EVENT_TYPES) {
      expect(eventReachesEndpoint(inDm(type), all)).toBe(true);
      expect(eventReachesEndpoint(inDm(type), listing)).toBe(false);
    }
  });

  test('channel.created, channel.deleted, session.evicted and test are never fanned out', () => {
    for (const type of [...UNSENT_EVENT_TYPES, 'test']) {
      expect(eventReachesEndpoint(inChannel(type), all)).toBe(false);
    }
    expect(eventReachesEndpoint({ type: 'session.evicted', channelId: null, data: { session_id: 's' } }, all)).toBe(false);
  });
});
