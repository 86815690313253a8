import { startHarness, type Harness } from '../../../../test/support/harness';
import { addToChannel, makeChannel, memberCaller, messagingAccount, post } from '../../../../test/support/messaging';

/**
 * Cross-resource references in messaging (spec: Hosts rule 2; Errors not_found / not_a_member).
 * A `ts` or `thread_ts` names a message only inside the channel of the path; a DM is invisible
 * to anyone outside it (404, never its text); another account's channel is not found.
 */
let h: Harness;
beforeAll(async () => { h = await startHarness({ limitsEnabled: false }); });
afterAll(async () => { await h.close(); });

describe('messages and threads of another channel', () => {
  test('a reply whose thread_ts names a message of another channel is 400 as for no message; reading that thread through this channel is 404', async () => {
    const a = await messagingAccount(h);
    const secret = await makeChannel(a.ownerApi, `secret-${Date.now()}`);
    const root = await post(a.ownerApi, secret, { text: 'secret root' });
    const bob = await memberCaller(h, a.accountId);
    const open = await makeChannel(bob);
    const reply = await bob.post(`/channels/${open}/messages`, { text: 'sneaky', thread_ts: root.ts });
    // Refused the same way whether the ts exists elsewhere or nowhere: no oracle for other channels.
    expect(reply.status).toBe(400);
    expect(reply.body.error).toMatchObject({ code: 'invalid_request', field: 'thread_ts' });
    const nowhere = await bob.post(`/channels/${open}/messages`, { text: 'x', thread_ts: '1.000001' });
    expect(nowhere.body.error.message).toBe(reply.body.error.message);
    const thread = await bob.get(`/channels/${open}/threads/${root.ts}`);
    expect(thread.status).toBe(404);
    expect(thread.text).not.toContain('secret root');
    const direct = await bob.get(`/channels/${secret}/threads/${root.ts}`);
    expect(direct.status).toBe(403);
    expect(direct.body.error.code).toBe('not_a_member');
    const replies = await a.ownerApi.get(`/channels/${secret}/threads/${root.ts}`);
    expect(replies.body.data.map((m: { text: string }) => m.text)).toEqual(['secret root']);
  });

  test('a DM the caller is not in: read, post, edit, react, thread, members all 404 (an admin too), its text never shown', async () => {
    const a = await messagingAccount(h);
    const bob = await memberCaller(h, a.accountId);
    const dm = (await a.ownerApi.post('/dms', { members: [bob.identityId] })).body.id as string;
    const m = await post(bob, dm, { text: 'only us two' });
    const admin = await memberCaller(h, a.accountId, 'admin');
    const tries = [
      admin.get(`/channels/${dm}/messages`),
      admin.get(`/channels/${dm}`),
      admin.get(`/channels/${dm}/members`),
      admin.post(`/channels/${dm}/messages`, { text: 'hi' }),
      admin.patch(`/channels/${dm}/messages/${m.ts}`, { text: 'edited' }),
      admin.put(`/channels/${dm}/messages/${m.ts}/reactions/thumbsup`),
      admin.get(`/channels/${dm}/threads/${m.ts}`),
      admin.post(`/channels/${dm}/members`, { identity_id: admin.identityId }),
      admin.del(`/channels/${dm}/messages/${m.ts}`),
    ];
    for (const res of await Promise.all(tries)) {
      expect(res.status).toBe(404);
      expect(res.text).not.toContain('only us two');
    }
    expect((await admin.get('/dms')).body.data).toEqual([]);
  });

  test('a channel of another account through the caller\'s account path: 404', async () => {
    const a = await messagingAccount(h);
    const b = await messagingAccount(h);
    const theirs = await makeChannel(b.ownerApi);
    const m = await post(b.ownerApi, theirs, { text: 'b only' });
    for (const res of await Promise.all([
      a.ownerApi.get(`/channels/${theirs}`),
      a.ownerApi.get(`/channels/${theirs}/messages`),
      a.ownerApi.post(`/channels/${theirs}/messages`, { text: 'x' }),
      a.ownerApi.get(`/channels/${theirs}/threads/${m.ts}`),
    ])) {
      expect(res.status).toBe(404);
      expect(res.text).not.toContain('b only');
      expect(res.text).not.toContain(b.accountId);
    }
    // Adding another account's identity to one's own channel is refused.
    const mine = await makeChannel(a.ownerApi);
    const refused = await a.ownerApi.post(`/channels/${mine}/members`, { identity_id: b.owner.identityId });
    expect(refused.status).toBe(400);
    await addToChannel(a.ownerApi, mine, a.owner.identityId);
  });
});
