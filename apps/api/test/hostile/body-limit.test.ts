import { gzipSync } from 'node:zlib';
import request from 'supertest';
import { bearer, newAccount, newKey, signInWeb, startHarness, type Harness } from '../../../../test/support/harness';

// Body size limit: a request body over the size limit answers 400 invalid_request with
// reason body_too_large and the limit, never a 5xx (docs/api.md "Hostile input" and "Content limits").

let h: Harness;
beforeAll(async () => { h = await startHarness({ limitsEnabled: false }); });
afterAll(async () => { await h.close(); });

const LIMIT = 1024 * 1024; // BODY_LIMIT in apps/api/src/app.ts
const tooLarge = { error: expect.objectContaining({ code: 'invalid_request', field: 'body', reason: 'body_too_large', limit_bytes: LIMIT }) };

describe('Hostile input: request body size limit', () => {
  test('just under the limit is read; just over it answers 400 body_too_large with the limit', async () => {
    const a = await newAccount(h);
    const key = await newKey(h, a.accountId, a.owner.email, ['identities:manage']);
    const url = `/accounts/${a.accountId}/identities`;
    const shell = JSON.stringify({ name: 'bot', pad: '' });
    const under = await request(h.api).post(url).set(bearer(key)).set('Content-Type', 'application/json')
      .send(JSON.stringify({ name: 'bot', pad: 'y'.repeat(LIMIT - shell.length) }));
    expect(under.status).toBe(201);
    const over = await request(h.api).post(url).set(bearer(key)).set('Content-Type', 'application/json')
      .send(JSON.stringify({ name: 'bot', pad: 'y'.repeat(LIMIT - shell.length + 1) }));
    expect(over.status).toBe(400);
    expect(over.body).toEqual(tooLarge);
    expect(over.body.error.message).toMatch(/1048576 bytes/);
  });

  test('the limit applies after decompression (a gzip bomb is refused, not inflated)', async () => {
    const a = await newAccount(h);
    const key = await newKey(h, a.accountId, a.owner.email, ['identities:manage']);
    const bomb = gzipSync(Buffer.from(JSON.stringify({ name: 'bot', pad: ' '.repeat(8 * LIMIT) })));
    expect(bomb.length).toBeLessThan(LIMIT / 10);
    const res = await request(h.api).post(`/accounts/${a.accountId}/identities`).set(bearer(key))
      .set('Content-Type', 'application/json').set('Content-Encoding', 'gzip').serialize((b: Buffer) => b as unknown as string).send(bomb);
    expect(res.status).toBe(400);
    expect(res.body).toEqual(tooLarge);
  });

  test('a body that claims gzip but is not answers 400 invalid_request (was 500)', async () => {
    const a = await newAccount(h);
    const key = await newKey(h, a.accountId, a.owner.email, ['identities:manage']);
    const res = await request(h.api).post(`/accounts/${a.accountId}/identities`).set(bearer(key))
      .set('Content-Type', 'application/json').set('Content-Encoding', 'gzip').send('{"name":"bot"}');
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'invalid_request', field: 'body' });
  });

  test('on both hosts, signed in or not', async () => {
    const a = await newAccount(h);
    const w = await signInWeb(h, a.owner.email);
    const big = { text: 'x'.repeat(LIMIT + 10) };
    const web = await w.agent.post(`/accounts/${a.accountId}/channels/ch_x/messages`).set('X-CSRF-Token', w.csrf).send(big);
    expect(web.status).toBe(400);
    expect(web.body).toEqual(tooLarge);
    const anonymous = await request(h.web).post('/auth/sign-in').send({ email: 'a@example.test', password: 'x'.repeat(LIMIT + 10) });
    expect(anonymous.status).toBe(400);
    expect(anonymous.body).toEqual(tooLarge);
  });
});
