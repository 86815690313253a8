import request from 'supertest';
import { bearer, newKey, startHarness, type Harness } from '../../../../test/support/harness';
import { makeChannel, memberCaller, messagingAccount, post } from '../../../../test/support/messaging';

/**
 * The audit log never shows what its reader could not read elsewhere (spec: audit:read is a
 * scope any role may hold). An entry about a DM the reader is not in, or (for a member) about a
 * regular channel they are not in, keeps its action, actor and time but not its channel, names,
 * topics or members: `target: null, data: {}, redacted: true`. Owners and admins see regular
 * channels' entries (they may read any channel's name and join it); no one sees another's DM.
 */
let h: Harness;
beforeAll(async () => { h = await startHarness({ limitsEnabled: false }); });
afterAll(async () => { await h.close(); });

type Entry = { action: string; target: { type: string; id: string } | null; data: Record<string, unknown>; redacted?: boolean };

async function auditOf(accountId: string, key: string): Promise<Entry[]> {
  const res = await request(h.api).get(`/accounts/${accountId}/audit?limit=200`).set(bearer(key));
  expect(res.status).toBe(200);
  return res.body.data as Entry[];
}

describe('GET /audit: entries about channels the reader cannot read are redacted', () => {
  test('a member with audit:read sees neither others\' DMs nor channels they are not in; an admin sees channels, not DMs', async () => {
    const a = await messagingAccount(h);
    const bob = await memberCaller(h, a.accountId);
    const carol = await memberCaller(h, a.accountId);
    const dm = (await a.ownerApi.post('/dms', { members: [bob.identityId] })).body.id as string;
    const secret = await makeChannel(a.ownerApi, `mergers-${Date.now()}`);
    await a.ownerApi.patch(`/channels/${secret}`, { topic: 'buying acme' }).expect(200);
    const m = await post(a.ownerApi, secret, { text: 'x' });
    await a.ownerApi.del(`/channels/${secret}/messages/${m.ts}`); // approval.requested names the channel
    const mine = await makeChannel(carol, 'carols');

    const carolKey = await newKey(h, a.accountId, carol.email, ['audit:read']);
    const seen = await auditOf(a.accountId, carolKey);
    const text = JSON.stringify(seen);
    for (const leak of [dm, bob.identityId, secret, 'mergers', 'buying acme']) expect(text).not.toContain(leak);
    for (const action of ['dm.opened', 'channel.updated', 'approval.requested']) {
      expect(seen.find((e) => e.action === action)).toMatchObject({ target: null, data: {}, redacted: true });
    }
    // Her own channel, and entries about no channel, are shown as they are.
    expect(seen.find((e) => e.action === 'channel.created' && e.target?.id === mine)).toMatchObject({ data: { name: 'carols' } });
    expect(seen.find((e) => e.action === 'api_key.created')).toMatchObject({ target: { type: 'api_key' } });

    const admin = await memberCaller(h, a.accountId, 'admin');
    const adminKey = await newKey(h, a.accountId, admin.email, ['audit:read']);
    const adminSeen = await auditOf(a.accountId, adminKey);
    expect(adminSeen.find((e) => e.action === 'channel.updated')).toMatchObject({ target: { id: secret }, data: { to: { topic: 'buying acme' } } });
    expect(JSON.stringify(adminSeen)).not.toContain(dm);
    expect(adminSeen.find((e) => e.action === 'dm.opened')).toMatchObject({ redacted: true });

    // Bob, inside the DM, sees it.
    const bobKey = await newKey(h, a.accountId, bob.email, ['audit:read']);
    expect((await auditOf(a.accountId, bobKey)).find((e) => e.action === 'dm.opened')).toMatchObject({ target: { id: dm } });
  });
});
