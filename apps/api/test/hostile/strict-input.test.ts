import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import request from 'supertest';
import { bearer, newAccount, newKey, signInWeb, startHarness, type Harness } from '../../../../test/support/harness';
import { createEndpointRow } from '../../../../test/support/webhooks';

// docs/api.md "Hostile input", strict input: a body's numbers and booleans are JSON numbers and
// booleans, never strings; a query's whole numbers are ASCII digits; a date-time is strict
// RFC 3339 between 1970 and 9999; a text of invisible characters only is blank. Each refusal is
// 400 invalid_request naming the field.

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ limitsEnabled: false, filesDir: mkdtempSync(path.join(tmpdir(), 'strict-input-')), filesDriver: 'local' });
});
afterAll(async () => { await h.close(); });

const ALL = ['identities:manage', 'account:manage', 'webhooks:manage'];

async function setup() {
  const a = await newAccount(h);
  const key = await newKey(h, a.accountId, a.owner.email, ALL);
  const base = `/accounts/${a.accountId}`;
  const ch = await request(h.api).post(`${base}/channels`).set(bearer(key)).send({ name: 'general' }).expect(201);
  const msg = await request(h.api).post(`${base}/channels/${ch.body.id}/messages`).set(bearer(key)).send({ text: 'hi' }).expect(201);
  const ep = await createEndpointRow(h, { accountId: a.accountId, createdByUserId: a.owner.userId, url: 'https://receiver.example.test/hook' });
  const web = await signInWeb(h, a.owner.email);
  return { a, key, base, web, channelId: ch.body.id as string, ts: msg.body.ts as string, endpointId: ep.id };
}
type Setup = Awaited<ReturnType<typeof setup>>;

function expectInvalid(res: request.Response, field: string) {
  expect({ status: res.status, body: res.body }).toEqual({
    status: 400,
    body: { error: expect.objectContaining({ code: 'invalid_request', field, message: expect.any(String) }) },
  });
}

const webPost = (s: Setup, p: string, body: object) => s.web.agent.post(s.base + p).set('X-CSRF-Token', s.web.csrf).send(body);

describe('a JSON body\'s numbers and booleans must be JSON numbers and booleans, not strings', () => {
  test('numbers sent as strings are refused, naming the field (were 201)', async () => {
    const s = await setup();
    expectInvalid(await webPost(s, '/api-keys', { expires_in_days: '30' }), 'expires_in_days');
    expectInvalid(await webPost(s, '/uploads', { name: 'a.txt', size: '123', content_type: 'text/plain' }), 'size');
    const post = (body: object) => request(h.api).post(`${s.base}/channels/${s.channelId}/messages`).set(bearer(s.key)).send(body);
    expectInvalid(await post({ text: 'x', attachments: [{ url: 'https://x.test', size: '5' }] }), 'attachments.0.size');
    const patch = await request(h.api).patch(`${s.base}/channels/${s.channelId}/messages/${s.ts}`).set(bearer(s.key)).send({ text: 'y', version: '1' });
    expectInvalid(patch, 'version');
    // the same values as JSON numbers still pass
    expect((await webPost(s, '/api-keys', { expires_in_days: 30 })).status).toBe(201);
    expect((await webPost(s, '/uploads', { name: 'a.txt', size: 123, content_type: 'text/plain' })).status).toBe(201);
    const ok = await post({ text: 'x', attachments: [{ url: 'https://x.test', size: 5 }] });
    expect(ok.status).toBe(201);
    expect(ok.body.attachments[0].size).toBe(5);
  });

  test('booleans sent as strings or numbers are refused, naming the field', async () => {
    const s = await setup();
    expectInvalid(await webPost(s, '/api-keys', { read_only: 'true' }), 'read_only');
    expectInvalid(await webPost(s, '/api-keys', { read_only: 1 }), 'read_only');
    const patchEndpoint = (body: object) => request(h.api).patch(`${s.base}/webhooks/${s.endpointId}`).set(bearer(s.key)).send(body);
    expectInvalid(await patchEndpoint({ enabled: 'false' }), 'enabled');
    expect((await webPost(s, '/api-keys', { read_only: true })).status).toBe(201);
    expect((await patchEndpoint({ enabled: false })).status).toBe(200);
  });
});

describe('a query\'s whole numbers are ASCII digits, checked before conversion', () => {
  test('limit with spaces, an exponent or a sign is refused, naming limit (were 200)', async () => {
    const s = await setup();
    for (const limit of ['%205%20', '2e1', '%2B5', '5.0', '0x10', '']) {
      expectInvalid(await request(h.api).get(`${s.base}/channels?limit=${limit}`).set(bearer(s.key)), 'limit');
    }
    const page = await request(h.api).get(`${s.base}/channels?limit=1`).set(bearer(s.key)).expect(200);
    expect(page.body.data).toHaveLength(1);
    await request(h.api).get(`${s.base}/channels?limit=007`).set(bearer(s.key)).expect(200);
  });
});

describe('a date-time is strict RFC 3339, 1970-01-01T00:00:00Z..9999-12-31T23:59:59.999Z', () => {
  const BAD = [
    '%2B275760-09-13T00:00:00.000Z', // extended year beyond 9999 (was 200, echoed as "+275760-…")
    '-271821-04-20T00:00:00.000Z', // negative extended year
    '0000-01-01T00:00:00Z', // before 1970
    '0000-01-01', // a date alone
    '2024-01-01%2010:00', // no T, no zone (was read as UTC)
    '2024-01-01T10:00:00', // no zone
    '2024-02-30T00:00:00Z', // a day February lacks (was read as March 1)
    '2024-01-01T24:00:00Z',
    '1700000000',
  ];

  test('replay-failed count: refused naming since; a valid one with an offset is echoed in UTC', async () => {
    const s = await setup();
    const count = (since: string) => request(h.api).get(`${s.base}/webhooks/${s.endpointId}/replay-failed?since=${since}`).set(bearer(s.key));
    for (const since of BAD) expectInvalid(await count(since), 'since');
    const ok = await count('2024-01-01T10:00:00.5%2B01:00').expect(200);
    expect(ok.body.since).toBe('2024-01-01T09:00:00.500Z');
    expect((await count('1970-01-01T00:00:00Z').expect(200)).body.since).toBe('1970-01-01T00:00:00.000Z');
    expectInvalid(await count('1969-12-31T23:59:59.999Z'), 'since');
  });

  test('replay-failed body, delivery log since/until and search after/before are refused naming the field', async () => {
    const s = await setup();
    const replay = (since: string) => request(h.api).post(`${s.base}/webhooks/${s.endpointId}/replay-failed`).set(bearer(s.key)).send({ since });
    for (const since of ['2024-01-01 10:00', '+275760-09-13T00:00:00.000Z', '2024-01-01']) expectInvalid(await replay(since), 'since');
    const log = (q: string) => request(h.api).get(`${s.base}/webhooks/${s.endpointId}/deliveries?${q}`).set(bearer(s.key));
    expectInvalid(await log(`since=${BAD[0]}`), 'since');
    expectInvalid(await log(`until=${BAD[4]}`), 'until');
    await log('since=2024-01-01T00:00:00Z&until=9999-12-31T23:59:59.999Z').expect(200);
    const search = (q: string) => s.web.agent.get(`${s.base}/search?q=hi&${q}`);
    expectInvalid(await search(`after=${BAD[0]}`), 'after');
    expectInvalid(await search(`before=${BAD[1]}`), 'before');
    await search('after=2024-01-01T00:00:00Z').expect(200);
    // a search bound may be a date alone (that day's first instant, UTC), as people write filters
    await search('after=2024-01-01&before=2024-12-31').expect(200);
    expectInvalid(await search('after=2024-02-30'), 'after');
    expectInvalid(await search('before=1969-12-31'), 'before');
  });
});

describe('a text of invisible characters only is blank', () => {
  // ZWSP, braille blank, Hangul filler, word joiner + BOM + soft hyphen, ZWNJ + ZWJ with white space
  const BLANKS = ['\u200b\u200b', '\u2800', '\u3164', '\u2060\ufeff\u00ad', ' \u200c\u200d\u00a0\u3000'];

  test('a message needs visible text or an attachment: posting and editing (were 201/200)', async () => {
    const s = await setup();
    const post = (body: object) => request(h.api).post(`${s.base}/channels/${s.channelId}/messages`).set(bearer(s.key)).send(body);
    const edit = (text: string) => request(h.api).patch(`${s.base}/channels/${s.channelId}/messages/${s.ts}`).set(bearer(s.key)).send({ text });
    for (const text of BLANKS) {
      expectInvalid(await post({ text }), 'text');
      expectInvalid(await edit(text), 'text');
    }
    // invisible characters inside visible text, and blank text with an attachment, still pass
    expect((await post({ text: 'a\u200bb' })).status).toBe(201);
    expect((await post({ text: '\u200b', attachments: [{ url: 'https://x.test/a.png' }] })).status).toBe(201);
  });

  test('an agent name and a search query must have a visible character', async () => {
    const s = await setup();
    for (const name of BLANKS) {
      expectInvalid(await request(h.api).post(`${s.base}/identities`).set(bearer(s.key)).send({ name }), 'name');
    }
    expectInvalid(await s.web.agent.get(`${s.base}/search?q=${encodeURIComponent('\u200b\u2800')}`), 'q');
    await s.web.agent.get(`${s.base}/search?q=hi`).expect(200);
  });
});
