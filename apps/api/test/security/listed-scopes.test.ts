import request from 'supertest';
import { setMemberRole } from '@teamchat/core';
import { addPerson, bearer, newAccount, newAgent, newKey, startHarness, type Harness } from '../../../../test/support/harness';

/**
 * Spec: Authentication rule 8. "`webhooks:manage` belongs only to an owner's or admin's
 * credential; a member's credential can never carry it." The API keys list shows the scopes a
 * credential carries now (its person's current role), the same rule as when it is used.
 */
let h: Harness;
beforeAll(async () => { h = await startHarness(); });
afterAll(async () => { await h.close(); });

async function listedScopes(accountId: string, ownerKey: string): Promise<Map<string, string[]>> {
  const res = await request(h.api).get(`/accounts/${accountId}/api-keys?limit=100`).set(bearer(ownerKey));
  expect(res.status).toBe(200);
  return new Map((res.body.data as Array<{ id: string; scopes: string[] }>).map((k) => [k.id, k.scopes]));
}

const setRole = (accountId: string, userId: string, role: 'admin' | 'member') =>
  h.deps.database.db.transaction((tx) => setMemberRole(tx, { accountId, userId, role }));

describe("the API keys list shows the scopes a credential carries under its person's current role", () => {
  test("a demoted admin's key and agent are listed without webhooks:manage; promoted again, it is back", async () => {
    const a = await newAccount(h);
    const ownerKey = await newKey(h, a.accountId, a.owner.email, ['credentials:manage']);
    const admin = await addPerson(h, a.accountId, 'admin');
    await newKey(h, a.accountId, admin.email, ['webhooks:manage', 'audit:read']);
    const agent = await newAgent(h, a.accountId, admin.email, ['webhooks:manage']);

    const asAdmin = await listedScopes(a.accountId, ownerKey);
    const adminCredentials = [...asAdmin.keys()].filter((id) => asAdmin.get(id)!.includes('webhooks:manage'));
    expect(adminCredentials).toHaveLength(2);
    expect(adminCredentials).toContain(agent.credentialId);

    await setRole(a.accountId, admin.user_id, 'member');
    const asMember = await listedScopes(a.accountId, ownerKey);
    for (const id of adminCredentials) {
      expect(asMember.get(id)).not.toContain('webhooks:manage');
      expect(asMember.get(id)).toContain('channels:read'); // the rest stays
    }
    expect(asMember.get(adminCredentials.find((id) => id !== agent.credentialId)!)).toContain('audit:read');

    await setRole(a.accountId, admin.user_id, 'admin');
    const promoted = await listedScopes(a.accountId, ownerKey);
    for (const id of adminCredentials) expect(promoted.get(id)).toContain('webhooks:manage');
  });
});
