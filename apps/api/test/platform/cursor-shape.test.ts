/**
 * Spec (Common conventions): "list endpoints take a cursor; a malformed, expired or foreign cursor
 * answers 400 `invalid_cursor`" — including a cursor the query schema refuses before any decoding
 * (empty, over 2,048 characters, repeated), while `limit` keeps 400 invalid_request.
 */
import request from 'supertest';
import { bearer, newAccount, newKey, signInWeb, startHarness, type Harness } from '../../../../test/support/harness';

let h: Harness;
beforeAll(async () => { h = await startHarness(); });
afterAll(async () => { await h.close(); });

async function identitiesCaller() {
  const a = await newAccount(h);
  const key = await newKey(h, a.accountId, a.owner.email, ['identities:manage']);
  const get = (query: string) => request(h.api).get(`/accounts/${a.accountId}/identities?${query}`).set(bearer(key));
  return { a, get };
}

test('an empty, over-long or repeated cursor is a malformed cursor: 400 invalid_cursor, not invalid_request', async () => {
  const { get } = await identitiesCaller();
  for (const query of ['cursor=', `cursor=${'a'.repeat(3000)}`, 'cursor=a&cursor=b', 'limit=2&cursor=']) {
    const res = await get(query);
    expect({ query: query.slice(0, 40), status: res.status, code: res.body.error?.code }).toEqual({ query: query.slice(0, 40), status: 400, code: 'invalid_cursor' });
  }
  // the other parameters keep invalid_request naming the field
  const badLimit = await get('limit=0');
  expect(badLimit.status).toBe(400);
  expect(badLimit.body.error).toMatchObject({ code: 'invalid_request', field: 'limit' });
  // and a list without a cursor still answers
  expect((await get('limit=1')).status).toBe(200);
});

test('the approvals list is one page and issues no cursor: any cursor sent to it is foreign → 400 invalid_cursor', async () => {
  const a = await newAccount(h);
  const web = await signInWeb(h, a.owner.email);
  const path = `/accounts/${a.accountId}/approvals`;
  const page = await web.agent.get(path);
  expect(page.status).toBe(200);
  expect(page.body.next_cursor).toBeNull();
  for (const cursor of ['garbage', '', 'a'.repeat(3000)]) {
    const res = await web.agent.get(path).query({ cursor });
    expect({ status: res.status, code: res.body.error?.code }).toEqual({ status: 400, code: 'invalid_cursor' });
  }
});
