import { postMessage, resolveActor, type Principal } from '@teamchat/core';
import { signInWeb, startHarness, type Harness } from '../../../../test/support/harness';
import { addToChannel, eventsOf, makeChannel, memberCaller, messagingAccount, post } from '../../../../test/support/messaging';

let h: Harness;
beforeAll(async () => { h = await startHarness({ limitsEnabled: false }); });
afterAll(async () => { await h.close(); });

/** Events raised by the calls in `fn`: the account's outbox rows written meanwhile. */
async function raisedBy(accountId: string, fn: () => Promise<unknown>) {
  const before = (await eventsOf(h, accountId)).length;
  await fn();
  return (await eventsOf(h, accountId)).slice(before);
}

describe('Events written in the same transaction (spec: Events / Subscribable events)', () => {
  test('a post raises exactly one message.posted, and one mention per mentioned identity (not the author, not unknown ids)', async () => {
    const a = await messagingAccount(h);
    const bob = await memberCaller(h, a.accountId);
    const carol = await memberCaller(h, a.accountId);
    const ch = await makeChannel(a.ownerApi);
    let m: { ts: string } = { ts: '' };
    const text = `hi <@${bob.identityId}> and <@${carol.identityId}>, me <@${a.owner.identityId}>, ghost <@idn_ghost>, bob again <@${bob.identityId}>`;
    const rows = await raisedBy(a.accountId, async () => {
      m = await post(a.ownerApi, ch, { text, links: ['https://a.example', 'https://b.example'], attachments: [{ url: 'https://f.example/x' }] });
    });
    expect(rows.map((r) => r.type)).toEqual(['message.posted', 'mention', 'mention']);
    for (const r of rows) {
      expect(r.id).toMatch(/^evt_/);
      expect(r.accountId).toBe(a.accountId);
      expect(r.channelId).toBe(ch);
      expect(r.createdAt).toBeInstanceOf(Date);
    }
    expect(rows[0].data).toEqual({
      channel: { id: ch, kind: 'channel' }, ts: m.ts, author: a.owner.identityId, thread_ts: null, session: null,
      links_count: 2, attachments_count: 1,
      mentions: [bob.identityId, carol.identityId, a.owner.identityId], broadcast: false,
      content: { text, links: ['https://a.example', 'https://b.example'] },
    });
    expect(rows.slice(1).map((r) => (r.data as { to: string }).to)).toEqual([bob.identityId, carol.identityId]);
    expect(rows[1].data).toMatchObject({ channel: { id: ch, kind: 'channel' }, ts: m.ts, author: a.owner.identityId, to: bob.identityId });
    const listed = await a.ownerApi.get(`/channels/${ch}/messages`);
    expect(listed.body.data[0].mentions).toEqual([bob.identityId, carol.identityId, a.owner.identityId]);
  });

  test('<!channel> and <!here> raise one mention with broadcast: true, channel and from', async () => {
    const a = await messagingAccount(h);
    const ch = await makeChannel(a.ownerApi);
    const rows = await raisedBy(a.accountId, () => post(a.ownerApi, ch, { text: '<!here> and <!channel>: standup' }));
    expect(rows.map((r) => r.type)).toEqual(['message.posted', 'mention']);
    expect(rows[1].data).toMatchObject({ broadcast: true, broadcast_kind: 'channel', channel: { id: ch, kind: 'channel' }, from: a.owner.identityId });
    expect(rows[1].data).not.toHaveProperty('to');
    const here = await raisedBy(a.accountId, () => post(a.ownerApi, ch, { text: '<!here> lunch' }));
    expect(here.map((r) => [r.type, (r.data as { broadcast_kind?: string }).broadcast_kind])).toEqual([['message.posted', undefined], ['mention', 'here']]);
  });

  test('a thread reply raises message.posted and thread.replied with thread_ts and parent_author', async () => {
    const a = await messagingAccount(h);
    const bob = await memberCaller(h, a.accountId);
    const ch = await makeChannel(a.ownerApi);
    await addToChannel(a.ownerApi, ch, bob.identityId);
    const root = await post(a.ownerApi, ch, { text: 'root' });
    let reply: { ts: string } = { ts: '' };
    const rows = await raisedBy(a.accountId, async () => { reply = await post(bob, ch, { text: 'reply', thread_ts: root.ts }); });
    expect(rows.map((r) => r.type)).toEqual(['message.posted', 'thread.replied']);
    expect(rows[1].data).toMatchObject({ ts: reply.ts, author: bob.identityId, thread_ts: root.ts, parent_author: a.owner.identityId, content: { text: 'reply' } });
  });

  test('a message in a DM raises one dm.received per other member', async () => {
    const a = await messagingAccount(h);
    const bob = await memberCaller(h, a.accountId);
    const carol = await memberCaller(h, a.accountId);
    const dm = await a.ownerApi.post('/dms', { members: [bob.identityId, carol.identityId] });
    const rows = await raisedBy(a.accountId, () => post(a.ownerApi, dm.body.id, { text: 'psst' }));
    expect(rows.map((r) => r.type)).toEqual(['message.posted', 'dm.received', 'dm.received']);
    expect(rows[0].data).toMatchObject({ channel: { id: dm.body.id, kind: 'dm' } });
    expect(rows.slice(1).map((r) => (r.data as { to: string }).to).sort()).toEqual([bob.identityId, carol.identityId].sort());
  });

  test('edit raises message.edited; delete raises message.deleted without text; reactions raise reaction.added/removed without text', async () => {
    const a = await messagingAccount(h);
    const ch = await makeChannel(a.ownerApi);
    const secret = 'the secret text';
    const m = await post(a.ownerApi, ch, { text: 'draft', links: ['https://x.example'] });
    const edited = await raisedBy(a.accountId, () => a.ownerApi.patch(`/channels/${ch}/messages/${m.ts}`, { text: secret }).expect(200));
    expect(edited.map((r) => r.type)).toEqual(['message.edited']);
    expect(edited[0].data).toMatchObject({ ts: m.ts, author: a.owner.identityId, version: 2, edited_by: a.owner.identityId, content: { text: secret, links: ['https://x.example'] } });
    // A PATCH that changes nothing raises nothing.
    expect(await raisedBy(a.accountId, () => a.ownerApi.patch(`/channels/${ch}/messages/${m.ts}`, { text: secret }).expect(200))).toEqual([]);

    const added = await raisedBy(a.accountId, () => a.ownerApi.put(`/channels/${ch}/messages/${m.ts}/reactions/tada`).expect(201));
    const again = await raisedBy(a.accountId, () => a.ownerApi.put(`/channels/${ch}/messages/${m.ts}/reactions/tada`).expect(200));
    const removed = await raisedBy(a.accountId, () => a.ownerApi.del(`/channels/${ch}/messages/${m.ts}/reactions/tada`).expect(204));
    const removedAgain = await raisedBy(a.accountId, () => a.ownerApi.del(`/channels/${ch}/messages/${m.ts}/reactions/tada`).expect(204));
    expect(added.map((r) => r.type)).toEqual(['reaction.added']);
    expect(again).toEqual([]);
    expect(removed.map((r) => r.type)).toEqual(['reaction.removed']);
    expect(removedAgain).toEqual([]);
    for (const r of [...added, ...removed]) {
      // Like every message event, reaction events carry the message's session and counts; never text.
      expect(r.data).toEqual({
        channel: { id: ch, kind: 'channel' }, ts: m.ts, author: a.owner.identityId, thread_ts: null,
        session: null, links_count: 1, attachments_count: 0, emoji: 'tada', by: a.owner.identityId,
      });
    }

    const { agent, csrf } = await signInWeb(h, a.owner.email);
    const deleted = await raisedBy(a.accountId, () =>
      agent.delete(`/accounts/${a.accountId}/channels/${ch}/messages/${m.ts}`).set('X-CSRF-Token', csrf).expect(204));
    expect(deleted.map((r) => r.type)).toEqual(['message.deleted']);
    expect(deleted[0].data).toEqual({
      channel: { id: ch, kind: 'channel' }, ts: m.ts, author: a.owner.identityId, thread_ts: null,
      session: null, links_count: 1, attachments_count: 0, deleted_by: a.owner.identityId,
    });
    expect(JSON.stringify(deleted[0].data)).not.toContain(secret);
  });

  test('a write that rolls back leaves no event (and no message)', async () => {
    const a = await messagingAccount(h);
    const ch = await makeChannel(a.ownerApi);
    const principal: Principal = { via: 'api_key', id: 'key_test', userId: a.owner.userId, accountId: a.accountId, identityId: a.owner.identityId, readOnly: false };
    const { actor } = await resolveActor(h.deps.database.db, principal, a.accountId);
    const before = await eventsOf(h, a.accountId);
    // The use case writes its message and events through the caller's transaction; a later failure undoes all of it.
    await expect(h.deps.database.db.transaction(async (tx) => {
      await postMessage(tx, { actor, channelId: ch, text: `rolled back <@${a.owner.identityId}> <!channel>` });
      throw new Error('boom after the post');
    })).rejects.toThrow('boom after the post');
    expect(await eventsOf(h, a.accountId)).toEqual(before);
    expect((await a.ownerApi.get(`/channels/${ch}/messages`)).body.data).toEqual([]);
    // Through HTTP: a post that fails after its ts was taken (unknown thread) leaves nothing either.
    const failed = await a.ownerApi.post(`/channels/${ch}/messages`, { text: 'orphan', thread_ts: '1000000000.000001' });
    expect(failed.status).toBe(400);
    expect(await eventsOf(h, a.accountId)).toEqual(before);
    // And the next post works normally with exactly one message.posted.
    const ok = await raisedBy(a.accountId, () => post(a.ownerApi, ch, { text: 'fine' }));
    expect(ok.map((r) => r.type)).toEqual(['message.posted']);
  });
});
