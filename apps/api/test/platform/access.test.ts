import request from 'supertest';
import { createApiKey, getMemberByEmail, setMemberRole } from '@teamchat/core';
import { addPerson, bearer, newAccount, newAgent, newKey, signInWeb, startHarness, type Harness } from '../../../../test/support/harness';

let h: Harness;
beforeAll(async () => { h = await startHarness(); });
afterAll(async () => { await h.close(); });

describe('Authentication rule 7: insufficient_scope, not_a_member, forbidden', () => {
  test('a credential lacking the needed scope → 403 insufficient_scope', async () => {
    const a = await newAccount(h);
    const key = await newKey(h, a.accountId, a.owner.email, ['audit:read']);
    for (const path of ['', '/members', '/identities', '/api-keys', '/jobs/job_x']) {
      const res = await request(h.api).get(`/accounts/${a.accountId}${path}`).set(bearer(key));
      expect(res.status).toBe(403);
      expect(res.body.error.code).toBe('insufficient_scope');
    }
    const audit = await request(h.api).get(`/accounts/${a.accountId}/audit`).set(bearer(key));
    expect(audit.status).toBe(200);
  });

  test("a key of another account → 403 not_a_member; nothing of that account is visible", async () => {
    const a = await newAccount(h);
    const b = await newAccount(h);
    const keyA = await newKey(h, a.accountId, a.owner.email, ['account:manage', 'members:manage']);
    for (const path of ['', '/members']) {
      const res = await request(h.api).get(`/accounts/${b.accountId}${path}`).set(bearer(keyA));
      expect(res.status).toBe(403);
      expect(res.body.error.code).toBe('not_a_member');
      expect(JSON.stringify(res.body)).not.toContain(b.owner.email);
    }
  });

  test('an account that does not exist → 404 not_found (both hosts)', async () => {
    const a = await newAccount(h);
    const key = await newKey(h, a.accountId, a.owner.email, ['account:manage']);
    const api = await request(h.api).get('/accounts/acct_doesnotexist').set(bearer(key));
    expect(api.status).toBe(404);
    expect(api.body.error.code).toBe('not_found');
    const { agent } = await signInWeb(h, a.owner.email);
    const web = await agent.get('/accounts/acct_doesnotexist');
    expect(web.status).toBe(404);
  });

  test('a signed-in person without a seat in the account → 403 not_a_member', async () => {
    const a = await newAccount(h);
    const b = await newAccount(h);
    const { agent } = await signInWeb(h, a.owner.email);
    const res = await agent.get(`/accounts/${b.accountId}`);
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('not_a_member');
  });

  test('a member whose role does not allow a scope, through the web → 403 forbidden', async () => {
    const a = await newAccount(h);
    const member = await addPerson(h, a.accountId, 'member');
    const { agent, csrf } = await signInWeb(h, member.email);
    // A member may register agents, but never with webhooks:manage (rule 8).
    const res = await agent.post(`/accounts/${a.accountId}/identities`).set('X-CSRF-Token', csrf).send({ name: 'bot', scopes: ['webhooks:manage'] });
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('forbidden');
  });
});

describe("Authentication rule 8: webhooks:manage never on a member's credential", () => {
  test('refused at key creation for a member, allowed for an admin', async () => {
    const a = await newAccount(h);
    const member = await addPerson(h, a.accountId, 'member');
    const admin = await addPerson(h, a.accountId, 'admin');
    const m = (await getMemberByEmail(h.deps.database.db, a.accountId, member.email))!;
    await expect(
      h.deps.database.db.transaction((tx) =>
        createApiKey(tx, { accountId: a.accountId, userId: m.userId, identityId: m.identityId, role: 'member', scopes: ['webhooks:manage'], readOnly: false }),
      ),
    ).rejects.toMatchObject({ code: 'forbidden' });
    const key = await newKey(h, a.accountId, admin.email, ['webhooks:manage']);
    expect(key).toMatch(/^tc_key_/);
  });

  test("a credential follows its person's current role: demoted to member, it can no longer grant webhooks:manage", async () => {
    const a = await newAccount(h);
    const admin = await addPerson(h, a.accountId, 'admin');
    const key = await newKey(h, a.accountId, admin.email, ['identities:manage', 'webhooks:manage']);
    const url = `/accounts/${a.accountId}/identities`;
    const before = await request(h.api).post(url).set(bearer(key)).send({ name: 'hooks-bot', scopes: ['webhooks:manage'] });
    expect(before.status).toBe(201);
    await h.deps.database.db.transaction((tx) => setMemberRole(tx, { accountId: a.accountId, userId: admin.user_id, role: 'member' }));
    const after = await request(h.api).post(url).set(bearer(key)).send({ name: 'hooks-bot-2', scopes: ['webhooks:manage'] });
    expect(after.status).toBe(403);
    expect(after.body.error.code).toBe('forbidden');
  });

  test('refused when a member key registers an agent with it', async () => {
    const a = await newAccount(h);
    const member = await addPerson(h, a.accountId, 'member');
    const key = await newKey(h, a.accountId, member.email, ['identities:manage']);
    const res = await request(h.api).post(`/accounts/${a.accountId}/identities`).set(bearer(key)).send({ name: 'bot', scopes: ['webhooks:manage'] });
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('forbidden');
  });
});

describe('Authentication rule 5: channels:read and channels:write always granted; a read-only key drops channels:write', () => {
  test('the scopes a key carries', async () => {
    const a = await newAccount(h);
    await newKey(h, a.accountId, a.owner.email, ['credentials:manage']);
    await newKey(h, a.accountId, a.owner.email, ['credentials:manage'], { readOnly: true });
    const key = await newKey(h, a.accountId, a.owner.email, ['credentials:manage']);
    const res = await request(h.api).get(`/accounts/${a.accountId}/api-keys`).set(bearer(key));
    const [, readOnly, normal] = res.body.data;
    expect(normal.scopes).toEqual(expect.arrayContaining(['channels:read', 'channels:write', 'credentials:manage']));
    expect(readOnly.read_only).toBe(true);
    expect(readOnly.scopes).toContain('channels:read');
    expect(readOnly.scopes).not.toContain('channels:write');
  });
});

describe('Agent scope rule (Authentication rules 4, 5): an agent registered through a credential gets at most that credential\'s scopes', () => {
  const url = (accountId: string) => `/accounts/${accountId}/identities`;
  const register = (accountId: string, key: string, body: object) => request(h.api).post(url(accountId)).set(bearer(key)).send(body);

  test('a read-only key mints no agent at all (it changes nothing): 403 insufficient_scope, reason read_only_credential', async () => {
    const a = await newAccount(h);
    const key = await newKey(h, a.accountId, a.owner.email, ['identities:manage'], { readOnly: true });
    for (const body of [{ name: 'reader' }, { name: 'writer', scopes: ['channels:write'] }]) {
      const res = await register(a.accountId, key, body);
      expect(res.status).toBe(403);
      expect(res.body.error).toMatchObject({ code: 'insufficient_scope', reason: 'read_only_credential' });
    }
    expect((await request(h.api).get(url(a.accountId)).set(bearer(key))).body.data.filter((i: { kind: string }) => i.kind === 'agent')).toEqual([]);
  });

  test("an owner's key without webhooks:manage cannot grant it (nor any scope it lacks); nothing is created", async () => {
    const a = await newAccount(h);
    const key = await newKey(h, a.accountId, a.owner.email, ['identities:manage']);
    for (const scope of ['webhooks:manage', 'audit:read', 'credentials:manage']) {
      const res = await register(a.accountId, key, { name: 'escalator', scopes: [scope] });
      expect(res.status).toBe(403);
      expect(res.body.error).toMatchObject({ code: 'insufficient_scope', reason: 'scope_not_held', required_scope: scope });
    }
    const list = await request(h.api).get(url(a.accountId)).set(bearer(key));
    expect(list.body.data.filter((i: { kind: string }) => i.kind === 'agent')).toEqual([]);
    const plain = await register(a.accountId, key, { name: 'plain' });
    expect(plain.status).toBe(201);
    expect(plain.body).toMatchObject({ read_only: false, scopes: ['channels:read', 'channels:write'] });
  });

  test("an owner's key holding webhooks:manage may grant it, and any subset of its scopes", async () => {
    const a = await newAccount(h);
    const key = await newKey(h, a.accountId, a.owner.email, ['identities:manage', 'webhooks:manage', 'audit:read']);
    const res = await register(a.accountId, key, { name: 'hooks', scopes: ['webhooks:manage', 'audit:read'] });
    expect(res.status).toBe(201);
    expect(res.body.scopes).toEqual(['channels:read', 'channels:write', 'webhooks:manage', 'audit:read']);
  });

  test("a member's key: never webhooks:manage (role), and nothing beyond the key's own scopes", async () => {
    const a = await newAccount(h);
    const member = await addPerson(h, a.accountId, 'member');
    const key = await newKey(h, a.accountId, member.email, ['identities:manage', 'audit:read']);
    const hooks = await register(a.accountId, key, { name: 'bot', scopes: ['webhooks:manage'] });
    expect(hooks.status).toBe(403);
    expect(hooks.body.error).toMatchObject({ code: 'forbidden', reason: 'role_scope' });
    const other = await register(a.accountId, key, { name: 'bot', scopes: ['members:manage'] });
    expect(other.body.error).toMatchObject({ code: 'insufficient_scope', reason: 'scope_not_held' });
    const ok = await register(a.accountId, key, { name: 'bot', scopes: ['audit:read'] });
    expect(ok.status).toBe(201);
  });

  test('an agent token registering an agent gives it at most its own scopes', async () => {
    const a = await newAccount(h);
    const parent = await newAgent(h, a.accountId, a.owner.email, ['identities:manage']);
    const denied = await register(a.accountId, parent.token, { name: 'child', scopes: ['account:manage'] });
    expect(denied.body.error).toMatchObject({ code: 'insufficient_scope', reason: 'scope_not_held', required_scope: 'account:manage' });
    const child = await register(a.accountId, parent.token, { name: 'child', scopes: ['identities:manage'] });
    expect(child.status).toBe(201);
    expect(child.body.scopes).toEqual(['channels:read', 'channels:write', 'identities:manage']);
  });

  test("a web session grants up to its role: an owner may grant webhooks:manage, a member anything but it", async () => {
    const a = await newAccount(h);
    const owner = await signInWeb(h, a.owner.email);
    const byOwner = await owner.agent.post(url(a.accountId)).set('X-CSRF-Token', owner.csrf)
      .send({ name: 'hooks', scopes: ['webhooks:manage', 'credentials:manage', 'account:manage'] });
    expect(byOwner.status).toBe(201);
    expect(byOwner.body.read_only).toBe(false);
    expect(byOwner.body.scopes).toEqual(expect.arrayContaining(['channels:write', 'webhooks:manage', 'credentials:manage', 'account:manage']));

    const member = await addPerson(h, a.accountId, 'member');
    const web = await signInWeb(h, member.email);
    const byMember = await web.agent.post(url(a.accountId)).set('X-CSRF-Token', web.csrf).send({ name: 'm', scopes: ['audit:read', 'account:manage'] });
    expect(byMember.status).toBe(201);
    expect(byMember.body.scopes).toEqual(['channels:read', 'channels:write', 'audit:read', 'account:manage']);
    const hooks = await web.agent.post(url(a.accountId)).set('X-CSRF-Token', web.csrf).send({ name: 'm2', scopes: ['webhooks:manage'] });
    expect(hooks.body.error).toMatchObject({ code: 'forbidden', reason: 'role_scope' });
  });
});
