import request from 'supertest';
import { addPerson, bearer, newAccount, newKey, signInWeb, startHarness, type Harness } from '../../../../test/support/harness';

/** GET /approvals: the pending approvals a person may decide, for the Approvals page (docs/web.md). */
let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h.close();
});

test('lists the pending approvals this person may decide, not others’, and drops decided ones; credentials are refused', async () => {
  const a = await newAccount(h);
  const author = await addPerson(h, a.accountId, 'member');
  const outsider = await addPerson(h, a.accountId, 'member');
  const key = await newKey(h, a.accountId, author.email, []);
  const ch = (await request(h.api).post(`/accounts/${a.accountId}/channels`).set(bearer(key)).send({ name: 'private-ish' }).expect(201)).body;
  await request(h.api).post(`/accounts/${a.accountId}/channels/${ch.id}/members`).set(bearer(key)).send({ identity_id: a.owner.identityId }).expect(201);
  const msg = (await request(h.api).post(`/accounts/${a.accountId}/channels/${ch.id}/messages`).set(bearer(key)).send({ text: 'drop me' }).expect(201)).body;
  const del = await request(h.api).delete(`/accounts/${a.accountId}/channels/${ch.id}/messages/${msg.ts}`).set(bearer(key)).expect(403);
  const approvalId = String(del.body.error.approval_url).split('/').pop();

  const owner = await signInWeb(h, a.owner.email);
  const listed = (await owner.agent.get(`/accounts/${a.accountId}/approvals`).expect(200)).body;
  expect(listed.data.map((x: { id: string }) => x.id)).toEqual([approvalId]);
  expect(listed.data[0]).toMatchObject({ status: 'pending', you_may_decide: true, target: { text_preview: 'drop me' } });

  const theAuthor = await signInWeb(h, author.email);
  expect((await theAuthor.agent.get(`/accounts/${a.accountId}/approvals`).expect(200)).body.data).toHaveLength(1);
  const other = await signInWeb(h, outsider.email);
  expect((await other.agent.get(`/accounts/${a.accountId}/approvals`).expect(200)).body.data).toEqual([]);

  await owner.agent.post(`/accounts/${a.accountId}/approvals/${approvalId}/deny`).set('X-CSRF-Token', owner.csrf).expect(200);
  expect((await owner.agent.get(`/accounts/${a.accountId}/approvals`).expect(200)).body.data).toEqual([]);
  const refused = await request(h.api).get(`/accounts/${a.accountId}/approvals`).set(bearer(key)).expect(403);
  expect(refused.body.error).toMatchObject({ code: 'forbidden', reason: 'web_session_required' });
});
