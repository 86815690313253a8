import request from 'supertest';
import { addPerson, bearer, newAccount, newKey, signInWeb, startHarness, type Harness } from '../../../../test/support/harness';

let h: Harness;
beforeAll(async () => { h = await startHarness(); });
afterAll(async () => { await h.close(); });

describe('Authentication rule 9: endpoints marked web session only refuse credentials', () => {
  test('GET /search with an API key or agent token → 403 forbidden, reason web_session_required', async () => {
    const a = await newAccount(h);
    const key = await newKey(h, a.accountId, a.owner.email, ['search:manage']);
    const res = await request(h.api).get(`/accounts/${a.accountId}/search?q=x`).set(bearer(key));
    expect(res.status).toBe(403);
    expect(res.body.error).toMatchObject({ code: 'forbidden', reason: 'web_session_required' });
  });
});

describe('GET /accounts/{id}/search (web session): messages the person can read', () => {
  test('finds text case-insensitively, only in channels the caller is a member of, newest first, paged', async () => {
    const a = await newAccount(h);
    const other = await addPerson(h, a.accountId, 'member');
    const ownerKey = await newKey(h, a.accountId, a.owner.email, []);
    const otherKey = await newKey(h, a.accountId, other.email, []);
    const mine = await request(h.api).post(`/accounts/${a.accountId}/channels`).set(bearer(ownerKey)).send({ name: 'mine' });
    const theirs = await request(h.api).post(`/accounts/${a.accountId}/channels`).set(bearer(otherKey)).send({ name: 'theirs' });
    expect(mine.status).toBe(201);
    for (const text of ['Deploy started', 'lunch?', 'deploy FINISHED', '100% done_now']) {
      const r = await request(h.api).post(`/accounts/${a.accountId}/channels/${mine.body.id}/messages`).set(bearer(ownerKey)).send({ text });
      expect(r.status).toBe(201);
    }
    await request(h.api).post(`/accounts/${a.accountId}/channels/${theirs.body.id}/messages`).set(bearer(otherKey)).send({ text: 'secret deploy plan' });

    const { agent } = await signInWeb(h, a.owner.email);
    const first = await agent.get(`/accounts/${a.accountId}/search`).query({ q: 'DEPLOY', limit: 1 });
    expect(first.status).toBe(200);
    expect(first.body.data.map((m: { text: string }) => m.text)).toEqual(['deploy FINISHED']);
    const second = await agent.get(`/accounts/${a.accountId}/search`).query({ q: 'DEPLOY', limit: 1, cursor: first.body.next_cursor });
    expect(second.body.data.map((m: { text: string }) => m.text)).toEqual(['Deploy started']);
    expect(second.body.next_cursor).toBeNull();
    // LIKE wildcards are literal.
    const literal = await agent.get(`/accounts/${a.accountId}/search`).query({ q: '%' });
    expect(literal.body.data.map((m: { text: string }) => m.text)).toEqual(['100% done_now']);
    // A cursor of one query is foreign to another.
    const foreign = await agent.get(`/accounts/${a.accountId}/search`).query({ q: 'lunch', cursor: first.body.next_cursor });
    expect(foreign.body.error.code).toBe('invalid_cursor');
    const missing = await agent.get(`/accounts/${a.accountId}/search`);
    expect(missing.body.error).toMatchObject({ code: 'invalid_request', field: 'q' });
  });
});
