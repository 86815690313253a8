import express from 'express';
import request from 'supertest';
import { sql } from '@teamchat/db';
import { errorHandler } from '../../src/http/error-handler';
import { requestContext } from '../../src/http/request-id';
import { bearer, newAccount, newKey, signInWeb, startHarness, type Harness } from '../../../../test/support/harness';

// Bad input never answers 5xx. NUL (U+0000), lone surrogates and over-deep
// bodies are refused at the edge with 400 invalid_request naming the field; the rest of the
// class (malformed percent-encoding, out-of-range numbers, PostgreSQL data exceptions) maps to
// 400 too (docs/api.md "Hostile input").

let h: Harness;
beforeAll(async () => { h = await startHarness({ limitsEnabled: false }); });
afterAll(async () => { await h.close(); });

const ALL = ['identities:manage', 'account:manage', 'audit:read', 'members:manage', 'credentials:manage'];

async function setup() {
  const a = await newAccount(h);
  const key = await newKey(h, a.accountId, a.owner.email, ALL);
  const base = `/accounts/${a.accountId}`;
  const ch = await request(h.api).post(`${base}/channels`).set(bearer(key)).send({ name: 'general' });
  const msg = await request(h.api).post(`${base}/channels/${ch.body.id}/messages`).set(bearer(key)).send({ text: 'hi' });
  return { a, key, base, channelId: ch.body.id as string, ts: msg.body.ts as string };
}

function expectInvalid(res: request.Response, field: string) {
  expect({ status: res.status, body: res.body }).toEqual({
    status: 400,
    body: { error: expect.objectContaining({ code: 'invalid_request', field, message: expect.any(String) }) },
  });
}

describe('Hostile input: NUL (U+0000) is refused at the edge, naming the field', () => {
  test('in a message text (was 500)', async () => {
    const s = await setup();
    const res = await request(h.api).post(`${s.base}/channels/${s.channelId}/messages`).set(bearer(s.key)).send({ text: 'a\u0000b' });
    expectInvalid(res, 'text');
    expect(res.body.error.message).toMatch(/NUL/);
  });

  test('as a channel id in the path, %00 (was 500)', async () => {
    const s = await setup();
    expectInvalid(await request(h.api).get(`${s.base}/channels/%00`).set(bearer(s.key)), 'channelId');
    expectInvalid(await request(h.api).get(`${s.base}/channels/a%00b/messages`).set(bearer(s.key)), 'channelId');
    expectInvalid(await request(h.api).get(`${s.base}/jobs/%00`).set(bearer(s.key)), 'jobId');
  });

  test('in every string field of every body, nested ones included', async () => {
    const s = await setup();
    const N = 'x\u0000';
    const cases: Array<[string, string, object, string]> = [
      ['post', `/channels`, { name: 'ok', topic: N }, 'topic'],
      ['post', `/channels`, { name: 'ok2', client_ref: N }, 'client_ref'],
      ['patch', `/channels/${s.channelId}`, { topic: N }, 'topic'],
      ['post', `/channels/${s.channelId}/members`, { identity_id: N }, 'identity_id'],
      ['post', `/channels/${s.channelId}/messages`, { text: 'x', attachments: [{ title: N, url: 'https://example.com' }] }, 'attachments.0.title'],
      ['post', `/channels/${s.channelId}/messages`, { text: 'x', client_ref: N }, 'client_ref'],
      ['patch', `/channels/${s.channelId}/messages/${s.ts}`, { text: N }, 'text'],
      ['post', `/dms`, { members: [N] }, 'members.0'],
      ['post', `/identities`, { name: N }, 'name'],
      // unknown fields are ignored, but must still be valid input
      ['post', `/channels`, { name: 'ok3', extra: { deep: [N] } }, 'extra.deep.0'],
    ];
    for (const [method, path, body, field] of cases) {
      const res = await (request(h.api) as any)[method](s.base + path).set(bearer(s.key)).send(body);
      expectInvalid(res, field);
    }
  });

  test('in the query, and on the web host (search, sign-in)', async () => {
    const s = await setup();
    expectInvalid(await request(h.api).get(`${s.base}/channels?cursor=a%00`).set(bearer(s.key)), 'cursor');
    const w = await signInWeb(h, s.a.owner.email);
    expectInvalid(await w.agent.get(`${s.base}/search?q=a%00b`), 'q');
    expectInvalid(await request(h.web).post('/auth/sign-in').send({ email: s.a.owner.email, password: 'a\u0000' }), 'password');
  });
});

describe('Hostile input: the rest of the class answers 4xx, never 500', () => {
  test('a lone surrogate is refused rather than stored silently changed (was 201 with U+FFFD)', async () => {
    const s = await setup();
    const res = await request(h.api).post(`${s.base}/channels/${s.channelId}/messages`).set(bearer(s.key))
      .set('Content-Type', 'application/json').send('{"text":"a\\ud800b"}');
    expectInvalid(res, 'text');
    const paired = await request(h.api).post(`${s.base}/channels/${s.channelId}/messages`).set(bearer(s.key)).send({ text: 'ok 😀 \u202e' });
    expect(paired.status).toBe(201);
    expect(paired.body.text).toBe('ok 😀 \u202e');
  });

  test('malformed percent-encoding in the path (%zz, an encoded lone surrogate) (was 500)', async () => {
    const s = await setup();
    expectInvalid(await request(h.api).get(`${s.base}/channels/%zz`).set(bearer(s.key)), 'path');
    expectInvalid(await request(h.api).get(`${s.base}/channels/%ED%A0%80`).set(bearer(s.key)), 'path');
    expectInvalid(await request(h.api).get(`/accounts/%zz/channels`).set(bearer(s.key)), 'path');
  });

  test('a version beyond the integer column is 400 naming version, not 409 or 500', async () => {
    const s = await setup();
    for (const version of [2 ** 31, 2 ** 40]) {
      const res = await request(h.api).patch(`${s.base}/channels/${s.channelId}/messages/${s.ts}`).set(bearer(s.key)).send({ text: 'y', version });
      expectInvalid(res, 'version');
    }
    const unsafe = await request(h.api).patch(`${s.base}/channels/${s.channelId}/messages/${s.ts}`).set(bearer(s.key))
      .set('Content-Type', 'application/json').send('{"text":"y","version":123456789012345678901234567890}');
    expectInvalid(unsafe, 'version');
    expectInvalid(await request(h.api).get(`${s.base}/channels?limit=99999999999999999999999`).set(bearer(s.key)), 'limit');
  });

  test('a body nested deeper than 32 levels is refused, with or without Idempotency-Key (was 500 with one)', async () => {
    const s = await setup();
    const deep = `{"name":"deep","x":${'['.repeat(10_000)}${']'.repeat(10_000)}}`;
    for (const key of [undefined, '6f1c2b1e-8a7d-4c1e-9a3b-1c2d3e4f5a6b']) {
      const r = request(h.api).post(`${s.base}/channels`).set(bearer(s.key)).set('Content-Type', 'application/json');
      if (key) r.set('Idempotency-Key', key);
      const res = await r.send(deep);
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('invalid_request');
      expect(res.body.error.field).toMatch(/^x(\.0)+$/);
    }
    const ok = await request(h.api).post(`${s.base}/channels`).set(bearer(s.key)).send({ name: 'shallow', x: [[[[1]]]] });
    expect(ok.status).toBe(201);
  });

  test('an error never echoes a huge hostile field name or value (found by the properties: a 70 KB answer reset the connection)', async () => {
    const s = await setup();
    const res = await request(h.api).get(`${s.base}/channels?${'%00'.repeat(3000)}=x`).set(bearer(s.key));
    expect(res.status).toBe(400);
    expect(res.body.error.field.length).toBeLessThanOrEqual(101);
    expect(res.text.length).toBeLessThan(2000);
    const long = await request(h.api).post(`${s.base}/channels`).set(bearer(s.key)).send({ name: 'A'.repeat(50_000) });
    expect(long.status).toBe(400);
    expect(long.text.length).toBeLessThan(2000);
  });

  test('safety net: a PostgreSQL data exception (SQLSTATE 22xxx) raised by input maps to 400 invalid_request', async () => {
    const app = express();
    app.set('deps', h.deps);
    app.use(requestContext('api'));
    app.get('/int/:n', async (req) => {
      await h.deps.database.db.execute(sql`SELECT ${req.params.n}::int`);
    });
    app.get('/text', async () => {
      await h.deps.database.db.execute(sql`SELECT ${'a\u0000b'}::text`);
    });
    app.get('/other', async () => {
      await h.deps.database.db.execute(sql`SELECT * FROM no_such_table`);
    });
    app.use(errorHandler);
    for (const path of ['/int/99999999999', '/int/abc', '/text']) {
      const res = await request(app).get(path);
      expect({ path, status: res.status, code: res.body.error?.code }).toEqual({ path, status: 400, code: 'invalid_request' });
      expect(JSON.stringify(res.body)).not.toMatch(/SELECT|pg|stack/i);
    }
    // Only class 22 is the caller's fault: any other database error stays 500 internal.
    expect((await request(app).get('/other')).status).toBe(500);
  });
});
