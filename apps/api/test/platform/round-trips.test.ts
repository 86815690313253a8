/**
 * Database round trips on the hot path (docs/performance.md). Authentication reads the caller's seat in the
 * account of the path in the same statement (spec: Authentication rules 3 and 7 still hold:
 * revocation at once, not_a_member, scopes).
 */
import { randomUUID } from 'node:crypto';
import request from 'supertest';
import { forgetPostFacts, revokeCredential } from '@teamchat/core';
import { and, eq, events, messages } from '@teamchat/db';
import { bearer, newAccount, newKey, signInWeb, startHarness, type Harness } from '../../../../test/support/harness';
import { queriesDuring } from '../../../../test/support/round-trips';
import { makeChannel, memberCaller, messagingAccount, post } from '../../../../test/support/messaging';

let h: Harness;
const db = () => h.deps.database.db;
beforeAll(async () => { h = await startHarness({ limitsEnabled: false }); });
afterAll(async () => { await h.close(); });

test('a key on a route under an account costs ONE query before the handler (credential, account, seat, role)', async () => {
  const a = await newAccount(h);
  const key = await newKey(h, a.accountId, a.owner.email, ['account:manage']);
  await request(h.api).get(`/accounts/${a.accountId}/audit`).set(bearer(key)); // stamps last_used_at (at most once a minute)
  const sent = await queriesDuring(async () => {
    // lacks audit:read: answered by the scope check, right after the account context
    const res = await request(h.api).get(`/accounts/${a.accountId}/audit`).set(bearer(key));
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('insufficient_scope');
  });
  expect(sent).toEqual(['auth_credential']);
});

test('a web session likewise: ONE query for the session and the seat', async () => {
  const a = await newAccount(h);
  const web = await signInWeb(h, a.owner.email);
  const sent = await queriesDuring(async () => {
    expect((await web.agent.get(`/accounts/${a.accountId}/channels/ch_missing`)).status).toBe(404);
  });
  expect(sent[0]).toBe('auth_session');
  expect(sent.filter((q) => q.startsWith('auth_') || q === 'account_membership')).toEqual(['auth_session']);
});

test('spec Authentication 3 and 7 still hold on the one query: revoked at once, another account is not_a_member, unknown account 404', async () => {
  const a = await newAccount(h);
  const b = await newAccount(h);
  const key = await newKey(h, a.accountId, a.owner.email, ['account:manage']);
  expect((await request(h.api).get(`/accounts/${b.accountId}`).set(bearer(key))).body.error.code).toBe('not_a_member');
  expect((await request(h.api).get('/accounts/acct_doesnotexist').set(bearer(key))).status).toBe(404);
  expect((await request(h.api).get(`/accounts/${a.accountId}`).set(bearer(key))).status).toBe(200);
  const list = await request(h.api).get(`/accounts/${a.accountId}/api-keys`).set(bearer(await newKey(h, a.accountId, a.owner.email, ['credentials:manage'])));
  const id = list.body.data.find((k: { id: string; scopes: string[] }) => k.scopes.includes('account:manage')).id;
  await h.deps.database.db.transaction((tx) => revokeCredential(tx, { accountId: a.accountId, credentialId: id }));
  expect((await request(h.api).get(`/accounts/${a.accountId}`).set(bearer(key))).status).toBe(401);
});

/** The relay's wake-up, sent after a commit of outbox rows (RelayWakeUps), is not the write's own work: left out of the lists below. */
const isWakeUp = (q: string) => q.includes('pg_notify');

describe('round trips of a post', () => {
  // The key's first post (the warm-up) authenticated it in full; its later posts are authenticated
  // from memory and confirmed by the post statement (remembered-auth.test.ts).
  const POST = ['post_message_facts', 'post_message'];
  test('without an Idempotency-Key: TWO queries (facts, the post; authenticated from memory) and no BEGIN/COMMIT; ONE once the facts are known', async () => {
    const a = await messagingAccount(h);
    const bob = await memberCaller(h, a.accountId);
    const ch = await makeChannel(a.ownerApi);
    const root = await post(a.ownerApi, ch, { text: 'warm-up' });
    const dm = (await a.ownerApi.post('/dms', { members: [bob.identityId] }).expect(201)).body.id as string;
    forgetPostFacts();
    const sends = async (channelId: string, body: object) =>
      (await queriesDuring(async () => expect((await a.ownerApi.post(`/channels/${channelId}/messages`, body)).status).toBe(201))).filter((q) => !isWakeUp(q));
    const mention = { text: `hi <@${bob.identityId}> <!here>`, client_ref: 'x' };
    expect(await sends(ch, mention)).toEqual(POST);
    // The channel's kind and the mentioned identity are now known (they never change): no read.
    expect(await sends(ch, mention)).toEqual(['post_message']);
    expect(await sends(ch, { text: 'plain' })).toEqual(['post_message']);
    // An identity not known yet, or a reply (its root is always read), reads the facts.
    expect(await sends(ch, { text: `hi <@${a.owner.identityId}>` })).toEqual(POST);
    expect(await sends(ch, { text: 'a reply', thread_ts: root.ts })).toEqual(POST);
    expect(await sends(ch, { text: 'another reply', thread_ts: root.ts })).toEqual(POST);
    // A DM: its members are fixed, so known after the first post.
    expect(await sends(dm, { text: 'psst' })).toEqual(POST);
    expect(await sends(dm, { text: 'psst again' })).toEqual(['post_message']);
  });

  test('refusals write nothing: a non-member is refused by the facts, or, when they are known, by the post statement and then explained', async () => {
    const a = await messagingAccount(h);
    const ch = await makeChannel(a.ownerApi);
    const outsider = await memberCaller(h, a.accountId);
    await outsider.get('/channels'); // a key's first use stamps last_used_at (once a minute)
    forgetPostFacts();
    // The stamp above is a fire-and-forget write; under load its query can be sent inside the next
    // window (it was seen once in a full run), so it is left out of what the post itself sends.
    const refused = async () => (await queriesDuring(async () => {
      expect((await outsider.post(`/channels/${ch}/messages`, { text: 'x' })).body.error.code).toBe('not_a_member');
      await new Promise((r) => setTimeout(r, 50)); // a wake-up would be on its way by now
    })).filter((q) => q !== 'auth_credential_touch');
    // Nothing committed, so no wake-up either.
    expect(await refused()).toEqual(['auth_credential', 'post_message_facts']);
    // The first refusal passed authentication's checks, so the key is remembered: the second is
    // authenticated from memory, and its refusal answered after a full authentication (remembered-auth.test.ts).
    expect(await refused()).toEqual(['post_message', 'post_message_facts', 'auth_credential']);
    expect((await db().select().from(messages).where(eq(messages.channelId, ch)))).toEqual([]);
  });

  test('the relay is woken AFTER the post commits, by a notification in a transaction of its own (one inside the post would hold the notify lock through its commit)', async () => {
    const a = await messagingAccount(h);
    const ch = await makeChannel(a.ownerApi);
    const settle = () => new Promise((r) => setTimeout(r, 50));
    const plain = await queriesDuring(async () => {
      expect((await a.ownerApi.post(`/channels/${ch}/messages`, { text: 'wake' })).status).toBe(201);
      await settle();
    });
    expect(plain.filter(isWakeUp)).toEqual(["SET LOCAL synchronous_commit = off; SELECT pg_notify('teamchat_events', '')"]);
    expect(plain.findIndex(isWakeUp)).toBeGreaterThan(plain.indexOf('post_message'));
    // With an Idempotency-Key the post commits with the key's record: the wake-up follows the COMMIT.
    const key = randomUUID();
    const keyed = await queriesDuring(async () => {
      expect((await a.ownerApi.post(`/channels/${ch}/messages`, { text: 'wake' }).set('Idempotency-Key', key)).status).toBe(201);
      await settle();
    });
    expect(keyed.filter(isWakeUp)).toHaveLength(1);
    expect(keyed.findIndex(isWakeUp)).toBeGreaterThan(keyed.findIndex((q) => /^commit/i.test(q)));
    // A replay commits no events: it wakes nothing.
    const replay = await queriesDuring(async () => {
      expect((await a.ownerApi.post(`/channels/${ch}/messages`, { text: 'wake' }).set('Idempotency-Key', key)).headers['idempotent-replayed']).toBe('true');
      await settle();
    });
    expect(replay.filter(isWakeUp)).toEqual([]);
  });

  test('with an Idempotency-Key: the claim, the post and the stored answer in ONE transaction; a replay never posts', async () => {
    const a = await messagingAccount(h);
    const ch = await makeChannel(a.ownerApi);
    const key = randomUUID();
    forgetPostFacts();
    const sent = await queriesDuring(async () => expect((await a.ownerApi.post(`/channels/${ch}/messages`, { text: 'k' }).set('Idempotency-Key', key)).status).toBe(201));
    const begin = sent.findIndex((q) => /^begin/i.test(q));
    const commit = sent.findIndex((q) => /^commit/i.test(q));
    const claim = sent.findIndex((q) => /insert into "idempotency_keys"/i.test(q));
    const save = sent.findIndex((q) => /update "idempotency_keys"/i.test(q));
    expect(begin).toBeGreaterThan(0);
    expect(begin < claim && claim < sent.indexOf('post_message_facts') && sent.indexOf('post_message') < save && save < commit).toBe(true);
    const replay = await queriesDuring(async () => expect((await a.ownerApi.post(`/channels/${ch}/messages`, { text: 'k' }).set('Idempotency-Key', key)).headers['idempotent-replayed']).toBe('true'));
    expect(replay.filter((q) => q.startsWith('post_message'))).toEqual([]);
  });
});

test('every other writer of outbox rows (channel, edit, reactions, delete) wakes the relay AFTER its COMMIT, never inside its transaction', async () => {
  const a = await messagingAccount(h);
  const web = await signInWeb(h, a.owner.email);
  const settle = () => new Promise((r) => setTimeout(r, 50));
  const wakesAfterCommit = async (write: () => Promise<unknown>) => {
    const sent = await queriesDuring(async () => { await write(); await settle(); });
    expect(sent.filter(isWakeUp)).toHaveLength(1);
    const commit = sent.findIndex((q) => /^commit/i.test(q));
    expect(commit).toBeGreaterThan(-1);
    expect(sent.findIndex(isWakeUp)).toBeGreaterThan(commit);
  };
  let ch = '';
  await wakesAfterCommit(async () => { ch = await makeChannel(a.ownerApi); });
  const m = await post(a.ownerApi, ch, { text: 'to change' });
  await settle();
  const base = `/channels/${ch}/messages/${m.ts}`;
  await wakesAfterCommit(async () => expect((await a.ownerApi.patch(base, { text: 'changed' })).status).toBe(200));
  // A write that is refused rolls back: no event row, and no wake-up either.
  const edited = async () => (await db().select().from(events).where(and(eq(events.accountId, a.accountId), eq(events.type, 'message.edited')))).length;
  const before = await edited();
  const refused = await queriesDuring(async () => {
    const res = await a.ownerApi.patch(base, { text: 'stale', version: 1 });
    expect(res.body.error.code).toBe('edit_conflict');
    await settle();
  });
  expect(refused.filter(isWakeUp)).toEqual([]);
  expect(refused.some((q) => /^rollback/i.test(q))).toBe(true);
  expect(await edited()).toBe(before);
  await wakesAfterCommit(async () => expect((await a.ownerApi.put(`${base}/reactions/tada`)).status).toBe(201));
  await wakesAfterCommit(async () => expect((await a.ownerApi.del(`${base}/reactions/tada`)).status).toBe(204));
  await wakesAfterCommit(async () => expect((await web.agent.delete(`/accounts/${a.accountId}${base}`).set('X-CSRF-Token', web.csrf)).status).toBe(204));
});
