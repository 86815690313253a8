import request from 'supertest';
import { signInWeb, startHarness, type Harness } from '../../../../test/support/harness';
import { addToChannel, byType, eventsOf, makeChannel, memberCaller, messagingAccount } from '../../../../test/support/messaging';

let h: Harness;
beforeAll(async () => { h = await startHarness({ limitsEnabled: false }); });
afterAll(async () => { await h.close(); });

describe('Channels (spec: Endpoints / Channels)', () => {
  test('create echoes client_ref, returns version as ETag, makes the creator a member and raises channel.created', async () => {
    const a = await messagingAccount(h);
    const res = await a.ownerApi.post('/channels', { name: 'General', topic: 'hello', client_ref: 'ref-1' });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ kind: 'channel', name: 'general', topic: 'hello', client_ref: 'ref-1', version: 1, created_by: a.owner.identityId });
    expect(res.body.id).toMatch(/^ch_/);
    expect(res.headers.etag).toBe('"1"');
    const members = await a.ownerApi.get(`/channels/${res.body.id}/members`);
    expect(members.status).toBe(200);
    expect(members.body.data.map((m: { identity_id: string }) => m.identity_id)).toEqual([a.owner.identityId]);
    const created = byType(await eventsOf(h, a.accountId), 'channel.created');
    expect(created).toHaveLength(1);
    expect(created[0].data).toEqual({ channel: { id: res.body.id, kind: 'channel' }, by: a.owner.identityId });
  });

  test('list shows the channels visible to the caller; get carries an ETag', async () => {
    const a = await messagingAccount(h);
    const bob = await memberCaller(h, a.accountId);
    const mine = await makeChannel(bob, 'bobs');
    await makeChannel(a.ownerApi, 'owners-only');
    const list = await bob.get('/channels');
    expect(list.status).toBe(200);
    expect(list.body.data.map((c: { id: string }) => c.id)).toEqual([mine]);
    expect(list.body.next_cursor).toBeNull();
    // An owner sees every regular channel, with is_member.
    const ownerList = await a.ownerApi.get('/channels');
    expect(ownerList.body.data.map((c: { name: string; is_member: boolean }) => [c.name, c.is_member])).toEqual([['bobs', false], ['owners-only', true]]);
    const one = await bob.get(`/channels/${mine}`);
    expect(one.status).toBe(200);
    expect(one.headers.etag).toBe('"1"');
    expect(one.body).toMatchObject({ id: mine, name: 'bobs', version: 1 });
  });

  test('list pages with a cursor (spec: Common conventions)', async () => {
    const a = await messagingAccount(h);
    for (let i = 0; i < 5; i++) await makeChannel(a.ownerApi, `p-${i}`);
    const first = await a.ownerApi.get('/channels?limit=2');
    expect(first.body.data.map((c: { name: string }) => c.name)).toEqual(['p-0', 'p-1']);
    const second = await a.ownerApi.get(`/channels?limit=2&cursor=${encodeURIComponent(first.body.next_cursor)}`);
    expect(second.body.data.map((c: { name: string }) => c.name)).toEqual(['p-2', 'p-3']);
    const bad = await a.ownerApi.get('/channels?cursor=garbage');
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('invalid_cursor');
  });

  test('PATCH with a current If-Match renames and bumps version; a stale If-Match answers 412 stale', async () => {
    const a = await messagingAccount(h);
    const id = await makeChannel(a.ownerApi, 'before');
    const ok = await a.ownerApi.patch(`/channels/${id}`, { name: 'after', topic: 'new topic' }).set('If-Match', '"1"');
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ name: 'after', topic: 'new topic', version: 2 });
    expect(ok.headers.etag).toBe('"2"');
    const stale = await a.ownerApi.patch(`/channels/${id}`, { topic: 'lost update' }).set('If-Match', '"1"');
    expect(stale.status).toBe(412);
    expect(stale.body.error).toMatchObject({ code: 'stale', current_version: 2 });
    const now = await a.ownerApi.get(`/channels/${id}`);
    expect(now.body.topic).toBe('new topic');
    const badHeader = await a.ownerApi.patch(`/channels/${id}`, { topic: 'x' }).set('If-Match', 'nonsense');
    expect(badHeader.status).toBe(400);
  });

  test('add member: a member adds an identity; adding again is harmless; unknown identity is 400', async () => {
    const a = await messagingAccount(h);
    const bob = await memberCaller(h, a.accountId);
    const id = await makeChannel(a.ownerApi);
    const add = await a.ownerApi.post(`/channels/${id}/members`, { identity_id: bob.identityId, client_ref: 'm1' });
    expect(add.status).toBe(201);
    expect(add.body).toMatchObject({ channel_id: id, identity_id: bob.identityId, kind: 'person', client_ref: 'm1' });
    const again = await a.ownerApi.post(`/channels/${id}/members`, { identity_id: bob.identityId });
    expect(again.status).toBe(200);
    const unknown = await a.ownerApi.post(`/channels/${id}/members`, { identity_id: 'idn_doesnotexist' });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.code).toBe('invalid_request');
    const list = await bob.get(`/channels/${id}/members`);
    expect(list.body.data).toHaveLength(2);
  });

  test('Authentication rule 7: a caller not in the channel gets 403 not_a_member', async () => {
    const a = await messagingAccount(h);
    const outsider = await memberCaller(h, a.accountId);
    const id = await makeChannel(a.ownerApi);
    for (const res of [
      await outsider.get(`/channels/${id}`),
      await outsider.get(`/channels/${id}/members`),
      await outsider.get(`/channels/${id}/messages`),
      await outsider.post(`/channels/${id}/messages`, { text: 'hi' }),
      await outsider.patch(`/channels/${id}`, { topic: 'x' }),
      await outsider.post(`/channels/${id}/members`, { identity_id: outsider.identityId }),
    ]) {
      expect(res.status).toBe(403);
      expect(res.body.error.code).toBe('not_a_member');
    }
    // Once added, the same caller reads and posts.
    await addToChannel(a.ownerApi, id, outsider.identityId);
    expect((await outsider.post(`/channels/${id}/messages`, { text: 'hi' })).status).toBe(201);
  });

  test('Authentication rule 5/7: a read-only credential lacks channels:write → 403 insufficient_scope; reads still work', async () => {
    const a = await messagingAccount(h);
    const ro = await memberCaller(h, a.accountId, 'member', { readOnly: true });
    const res = await ro.post('/channels', { name: 'nope' });
    expect(res.status).toBe(403);
    expect(res.body.error).toMatchObject({ code: 'insufficient_scope', reason: 'read_only_credential' });
    expect((await ro.get('/channels')).status).toBe(200);
  });

  test('bad input is 400 invalid_request; a taken name is 400 invalid_request, reason name_taken (no code outside the spec Errors table), never a 500', async () => {
    const a = await messagingAccount(h);
    for (const body of [{}, { name: '' }, { name: 'has space' }, { name: 'x'.repeat(81) }, { name: 'ok', topic: 't'.repeat(251) }, { name: 5 }]) {
      const res = await a.ownerApi.post('/channels', body);
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('invalid_request');
    }
    await makeChannel(a.ownerApi, 'taken');
    const dup = await a.ownerApi.post('/channels', { name: 'TAKEN' });
    expect(dup.status).toBe(400);
    expect(dup.body.error).toMatchObject({ code: 'invalid_request', reason: 'name_taken', field: 'name' });
    const other = await makeChannel(a.ownerApi, 'other');
    const rename = await a.ownerApi.patch(`/channels/${other}`, { name: 'taken' });
    expect(rename.status).toBe(400);
    expect(rename.body.error).toMatchObject({ code: 'invalid_request', reason: 'name_taken', field: 'name' });
    expect((await a.ownerApi.get('/channels/ch_nope')).status).toBe(404);
  });

  test('Hosts rule 1: the same paths work with a web session (with X-CSRF-Token on writes)', async () => {
    const a = await messagingAccount(h);
    const { agent, csrf } = await signInWeb(h, a.owner.email);
    const noCsrf = await agent.post(`/accounts/${a.accountId}/channels`).send({ name: 'web' });
    expect(noCsrf.status).toBe(403);
    const res = await agent.post(`/accounts/${a.accountId}/channels`).set('X-CSRF-Token', csrf).send({ name: 'web' });
    expect(res.status).toBe(201);
    const list = await agent.get(`/accounts/${a.accountId}/channels`);
    expect(list.body.data.map((c: { name: string }) => c.name)).toEqual(['web']);
    // The API host refuses the web session (wrong_host); nothing messaging-specific to do.
    expect((await request(h.api).get(`/accounts/${a.accountId}/channels`)).status).toBe(401);
  });
});
