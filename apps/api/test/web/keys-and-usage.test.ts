import request from 'supertest';
import { addPerson, bearer, newAccount, newKey, signInWeb, startHarness, type Harness } from '../../../../test/support/harness';

/** The API keys page's writes and the Account page's usage route (docs/web.md). */
let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h.close();
});

describe('POST /api-keys and /api-keys/{id}/revoke (web session only)', () => {
  test('a person creates a key for their seat, shown once; it works on the API host until revoked', async () => {
    const a = await newAccount(h);
    const web = await signInWeb(h, a.owner.email);
    const created = await web.agent.post(`/accounts/${a.accountId}/api-keys`).set('X-CSRF-Token', web.csrf).send({ scopes: ['audit:read'] }).expect(201);
    expect(created.body).toMatchObject({ id: expect.stringMatching(/^key_/), key: expect.stringMatching(/^tc_key_/), read_only: false });
    expect(created.body.scopes).toEqual(expect.arrayContaining(['channels:read', 'channels:write', 'audit:read']));
    await request(h.api).get(`/accounts/${a.accountId}/audit`).set(bearer(created.body.key)).expect(200);
    const listed = (await web.agent.get(`/accounts/${a.accountId}/api-keys`).expect(200)).body.data;
    expect(JSON.stringify(listed)).not.toContain(created.body.key);

    await web.agent.post(`/accounts/${a.accountId}/api-keys/${created.body.id}/revoke`).set('X-CSRF-Token', web.csrf).expect(200);
    await request(h.api).get(`/accounts/${a.accountId}/audit`).set(bearer(created.body.key)).expect(401);
    const audit = (await web.agent.get(`/accounts/${a.accountId}/audit`).expect(200)).body.data.map((e: { action: string }) => e.action);
    expect(audit).toEqual(expect.arrayContaining(['api_key.created', 'api_key.revoked']));
  });

  test('a member cannot grant webhooks:manage, nor revoke another person’s key; a credential cannot mint keys', async () => {
    const a = await newAccount(h);
    const m = await addPerson(h, a.accountId, 'member');
    const web = await signInWeb(h, m.email);
    const refused = await web.agent.post(`/accounts/${a.accountId}/api-keys`).set('X-CSRF-Token', web.csrf).send({ scopes: ['webhooks:manage'] }).expect(403);
    expect(refused.body.error).toMatchObject({ code: 'forbidden', reason: 'role_scope' });
    const ownerKey = await newKey(h, a.accountId, a.owner.email, ['credentials:manage']);
    const ownerKeyId = (await request(h.api).get(`/accounts/${a.accountId}/api-keys`).set(bearer(ownerKey)).expect(200)).body.data[0].id;
    const notYours = await web.agent.post(`/accounts/${a.accountId}/api-keys/${ownerKeyId}/revoke`).set('X-CSRF-Token', web.csrf).expect(403);
    expect(notYours.body.error).toMatchObject({ code: 'forbidden', reason: 'role' });
    const byKey = await request(h.api).post(`/accounts/${a.accountId}/api-keys`).set(bearer(ownerKey)).send({ scopes: [] }).expect(403);
    expect(byKey.body.error).toMatchObject({ code: 'forbidden', reason: 'web_session_required' });
    await web.agent.post(`/accounts/${a.accountId}/api-keys`).send({ scopes: [] }).expect(403); // no CSRF token
    await web.agent.post(`/accounts/${a.accountId}/api-keys/key_unknown/revoke`).set('X-CSRF-Token', web.csrf).expect(404);
  });
});

describe('GET /usage', () => {
  test('an owner sees every seat’s calls this minute and units today against the plan; a member only their own', async () => {
    const a = await newAccount(h, 'starter');
    const m = await addPerson(h, a.accountId, 'member');
    const key = await newKey(h, a.accountId, m.email, []);
    for (let i = 0; i < 3; i++) await request(h.api).get(`/accounts/${a.accountId}/channels`).set(bearer(key)).expect(200);
    const owner = await signInWeb(h, a.owner.email);
    const u = (await owner.agent.get(`/accounts/${a.accountId}/usage`).expect(200)).body;
    expect(u).toMatchObject({ plan: 'starter', degraded: false, limits: { calls_per_minute: h.deps.config.planLimits.starter.callsPerMinute } });
    const seat = u.seats.find((s: { user_id: string }) => s.user_id === m.user_id);
    expect(seat).toMatchObject({ email: m.email, role: 'member', calls_this_minute: 3, units_today: 3 });
    const ownerSeat = u.seats.find((s: { user_id: string }) => s.user_id === a.owner.userId);
    expect(ownerSeat.calls_this_minute).toBe(1); // this very call
    const mine = (await (await signInWeb(h, m.email)).agent.get(`/accounts/${a.accountId}/usage`).expect(200)).body;
    expect(mine.seats.map((s: { user_id: string }) => s.user_id)).toEqual([m.user_id]);
  });
});
