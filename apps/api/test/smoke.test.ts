import request from 'supertest';
import { bearer, newAccount, newKey, startHarness, type Harness } from '../../../test/support/harness';

let h: Harness;
beforeAll(async () => { h = await startHarness(); });
afterAll(async () => { await h.close(); });

test('smoke: GET account with key', async () => {
  const acct = await newAccount(h);
  const key = await newKey(h, acct.accountId, acct.owner.email, ['account:manage']);
  const res = await request(h.api).get(`/accounts/${acct.accountId}`).set(bearer(key));
  expect(res.status).toBe(200);
  expect(res.body.plan).toBe('pro');
});
