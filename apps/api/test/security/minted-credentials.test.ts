import request from 'supertest';
import { credentials, eq } from '@teamchat/db';
import { setMemberRole } from '@teamchat/core';
import { addPerson, bearer, newAccount, newKey, startHarness, type Harness } from '../../../../test/support/harness';

/**
 * Spec: Authentication rules 3, 4 and 8. A credential that registers an agent never grants more
 * than it holds: not a scope it lacks, not write access when it is read-only, and not a longer
 * life than its own (an expiring key cannot mint a token that outlives it).
 */
let h: Harness;
beforeAll(async () => { h = await startHarness(); });
afterAll(async () => { h.clock.reset(); await h.close(); });

const register = (accountId: string, key: string, scopes: string[] = []) =>
  request(h.api).post(`/accounts/${accountId}/identities`).set(bearer(key)).send({ name: 'bot', scopes });

async function credentialRow(id: string) {
  const [row] = await h.deps.database.db.select().from(credentials).where(eq(credentials.id, id));
  return row;
}

describe('an agent registered through a credential', () => {
  test('an expiring key mints a token that expires with it (not after): the agent answers 401 once the key has expired', async () => {
    const a = await newAccount(h);
    const expiresAt = new Date(Date.now() + 60 * 60 * 1000);
    const key = await newKey(h, a.accountId, a.owner.email, ['identities:manage', 'account:manage'], { expiresAt });
    const res = await register(a.accountId, key, ['account:manage']);
    expect(res.status).toBe(201);
    expect((await credentialRow(res.body.credential_id)).expiresAt?.toISOString()).toBe(expiresAt.toISOString());
    await request(h.api).get(`/accounts/${a.accountId}`).set(bearer(res.body.token)).expect(200);
    h.clock.set(new Date(expiresAt.getTime() + 1000));
    try {
      await request(h.api).get(`/accounts/${a.accountId}`).set(bearer(key)).expect(401);
      const agent = await request(h.api).get(`/accounts/${a.accountId}`).set(bearer(res.body.token));
      expect(agent.status).toBe(401);
      expect(agent.body.error.code).toBe('unauthorized');
    } finally {
      h.clock.reset();
    }
  });

  test('a key without expiry mints a token without expiry', async () => {
    const a = await newAccount(h);
    const key = await newKey(h, a.accountId, a.owner.email, ['identities:manage']);
    const res = await register(a.accountId, key);
    expect(res.status).toBe(201);
    expect((await credentialRow(res.body.credential_id)).expiresAt).toBeNull();
  });

  test('scopes: never one the key lacks (403 insufficient_scope scope_not_held); never webhooks:manage from a member', async () => {
    const a = await newAccount(h);
    const key = await newKey(h, a.accountId, a.owner.email, ['identities:manage']);
    const res = await register(a.accountId, key, ['webhooks:manage']);
    expect(res.status).toBe(403);
    expect(res.body.error).toMatchObject({ code: 'insufficient_scope', reason: 'scope_not_held', required_scope: 'webhooks:manage' });
    const member = await addPerson(h, a.accountId, 'member');
    const memberKey = await newKey(h, a.accountId, member.email, ['identities:manage']);
    const refused = await register(a.accountId, memberKey, ['webhooks:manage']);
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('forbidden');
  });

  test('an admin\'s key and the agent it minted lose webhooks:manage the moment the admin is demoted (checked on every call)', async () => {
    const a = await newAccount(h);
    const admin = await addPerson(h, a.accountId, 'admin');
    const key = await newKey(h, a.accountId, admin.email, ['identities:manage', 'webhooks:manage']);
    const agent = await register(a.accountId, key, ['webhooks:manage']);
    expect(agent.status).toBe(201);
    for (const k of [key, agent.body.token]) await request(h.api).get(`/accounts/${a.accountId}/webhooks`).set(bearer(k)).expect(200);
    await h.deps.database.db.transaction((tx) => setMemberRole(tx, { accountId: a.accountId, userId: admin.user_id, role: 'member' }));
    for (const k of [key, agent.body.token]) {
      const res = await request(h.api).get(`/accounts/${a.accountId}/webhooks`).set(bearer(k));
      expect(res.status).toBe(403);
      expect(res.body.error).toMatchObject({ code: 'insufficient_scope' });
    }
  });
});
