import { startHarness, type Harness } from '../../../../test/support/harness';
import { memberCaller, messagingAccount, post } from '../../../../test/support/messaging';

let h: Harness;
beforeAll(async () => { h = await startHarness({ limitsEnabled: false }); });
afterAll(async () => { await h.close(); });

describe('Direct messages (spec: Endpoints / Direct messages)', () => {
  test('open echoes client_ref and answers a channel object; posting and reading go through /channels/{id}/messages', async () => {
    const a = await messagingAccount(h);
    const bob = await memberCaller(h, a.accountId);
    const res = await a.ownerApi.post('/dms', { members: [bob.identityId], client_ref: 'dm-1' });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ kind: 'dm', name: null, client_ref: 'dm-1', members: [a.owner.identityId, bob.identityId].sort() });
    expect(res.body.id).toMatch(/^ch_/);
    const m = await post(a.ownerApi, res.body.id, { text: 'hello bob', client_ref: 'msg-1' });
    expect(m.client_ref).toBe('msg-1');
    const read = await bob.get(`/channels/${res.body.id}/messages`);
    expect(read.status).toBe(200);
    expect(read.body.data.map((x: { text: string }) => x.text)).toEqual(['hello bob']);
    expect((await post(bob, res.body.id, { text: 'hi!' })).author).toBe(bob.identityId);
  });

  test('opening the same member set again (from either side, in any order) returns the existing DM', async () => {
    const a = await messagingAccount(h);
    const bob = await memberCaller(h, a.accountId);
    const carol = await memberCaller(h, a.accountId);
    const first = await a.ownerApi.post('/dms', { members: [bob.identityId, carol.identityId] });
    expect(first.status).toBe(201);
    const again = await a.ownerApi.post('/dms', { members: [carol.identityId, bob.identityId, a.owner.identityId], client_ref: 'again' });
    expect(again.status).toBe(200);
    expect(again.body.id).toBe(first.body.id);
    expect(again.body.client_ref).toBe('again');
    const fromBob = await bob.post('/dms', { members: [a.owner.identityId, carol.identityId] });
    expect(fromBob.body.id).toBe(first.body.id);
    // A different set is a different DM.
    const pair = await a.ownerApi.post('/dms', { members: [bob.identityId] });
    expect(pair.status).toBe(201);
    expect(pair.body.id).not.toBe(first.body.id);
  });

  test('concurrent opens of the same set create one DM', async () => {
    const a = await messagingAccount(h);
    const bob = await memberCaller(h, a.accountId);
    const results = await Promise.all(Array.from({ length: 6 }, (_, i) =>
      (i % 2 ? bob : a.ownerApi).post('/dms', { members: [i % 2 ? a.owner.identityId : bob.identityId] })));
    expect(new Set(results.map((r) => r.body.id)).size).toBe(1);
    expect(results.filter((r) => r.status === 201)).toHaveLength(1);
  });

  test('list shows the caller\'s DMs only; a DM is invisible (404) to anyone else, owners included', async () => {
    const a = await messagingAccount(h);
    const bob = await memberCaller(h, a.accountId);
    const carol = await memberCaller(h, a.accountId);
    const dm = await bob.post('/dms', { members: [carol.identityId] });
    const bobs = await bob.get('/dms');
    expect(bobs.status).toBe(200);
    expect(bobs.body.data.map((d: { id: string; members: string[] }) => [d.id, d.members])).toEqual([[dm.body.id, [bob.identityId, carol.identityId].sort()]]);
    expect((await a.ownerApi.get('/dms')).body.data).toEqual([]);
    expect((await a.ownerApi.get('/channels')).body.data).toEqual([]); // DMs are not in the channel list
    for (const res of [
      await a.ownerApi.get(`/channels/${dm.body.id}`),
      await a.ownerApi.get(`/channels/${dm.body.id}/messages`),
      await a.ownerApi.post(`/channels/${dm.body.id}/messages`, { text: 'snoop' }),
      await a.ownerApi.get(`/channels/${dm.body.id}/members`),
    ]) {
      expect(res.status).toBe(404);
    }
    const get = await carol.get(`/channels/${dm.body.id}`);
    expect(get.body.members).toEqual([bob.identityId, carol.identityId].sort());
    // Membership of a DM is fixed.
    const add = await bob.post(`/channels/${dm.body.id}/members`, { identity_id: a.owner.identityId });
    expect(add.status).toBe(403);
    expect(add.body.error.code).toBe('forbidden');
  });

  test('bad member lists are 400 invalid_request', async () => {
    const a = await messagingAccount(h);
    for (const body of [{}, { members: [] }, { members: [a.owner.identityId] }, { members: ['idn_ghost'] }, { members: 'idn_x' },
      { members: Array.from({ length: 9 }, (_, i) => `idn_${i}`) }]) {
      const res = await a.ownerApi.post('/dms', body);
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('invalid_request');
    }
  });
});
