/**
 * A message post or a page of messages authenticated from memory (docs/api.md "Authentication
 * from memory"): once a credential's request to one of them passed a full authentication, its
 * next ones to that account skip the authentication round trip, and the route's statement
 * confirms what the authentication decided on.
 * Spec: Authentication 3 ("a revocation takes effect at once") and every refusal a full
 * authentication gives must hold exactly as before: these tests change each fact the
 * authentication rests on between two posts and check the answer and that nothing was written.
 */
import { hashSecret, revokeCredential, setAccountPlan, setAccountState, setMemberRole } from '@teamchat/core';
import { credentials, eq, messages, sql } from '@teamchat/db';
import request from 'supertest';
import { addPerson, bearer, newAgent, newKey, signInWeb, startHarness, type Harness } from '../../../../test/support/harness';
import { queriesDuring } from '../../../../test/support/round-trips';
import { ROUTES_FROM_MEMORY } from '../../src/http/remembered-auth';
import { addToChannel, callerFor, makeChannel, messagingAccount, post, type Caller, type MessagingAccount } from '../../../../test/support/messaging';

let h: Harness;
const db = () => h.deps.database.db;
beforeAll(async () => { h = await startHarness({ limitsEnabled: false }); });
afterAll(async () => { await h.close(); });
afterEach(() => h.clock.reset());

const isWakeUp = (q: string) => q.includes('pg_notify');
const fullAuthentications = (sent: string[]) => sent.filter((q) => q === 'auth_credential').length;

async function messagesIn(channelId: string): Promise<number> {
  const [row] = await db().select({ n: sql<string>`count(*)` }).from(messages).where(eq(messages.channelId, channelId));
  return Number(row.n);
}

async function credentialIdOf(key: string): Promise<string> {
  const [row] = await db().select({ id: credentials.id }).from(credentials).where(eq(credentials.secretHash, hashSecret(key)));
  return row.id;
}

interface Remembered { a: MessagingAccount; ch: string; caller: Caller; credentialId: string; userId: string }

/**
 * An account, a channel, and an admin's key whose authentication is remembered: one post made on
 * a full authentication, and a second checked to have been served from memory.
 */
async function remembered(opts: { expiresAt?: Date } = {}): Promise<Remembered> {
  const a = await messagingAccount(h);
  const ch = await makeChannel(a.ownerApi);
  const admin = await addPerson(h, a.accountId, 'admin');
  await addToChannel(a.ownerApi, ch, admin.identity_id);
  const key = await newKey(h, a.accountId, admin.email, [], { expiresAt: opts.expiresAt });
  const caller = callerFor(h, a.accountId, key, admin.identity_id, admin.email);
  const first = await queriesDuring(() => post(caller, ch, { text: 'first: authenticated in full, then remembered' }));
  expect(fullAuthentications(first)).toBe(1);
  const second = await queriesDuring(() => post(caller, ch, { text: 'second: from memory' }));
  expect(fullAuthentications(second)).toBe(0);
  return { a, ch, caller, credentialId: await credentialIdOf(key), userId: admin.user_id };
}

describe('the round trips', () => {
  test('ONE query (the route\'s statement) for a post or a page of messages once the credential passed a full authentication on either in that account; other routes and a post with an Idempotency-Key authenticate in full', async () => {
    const a = await messagingAccount(h);
    const ch = await makeChannel(a.ownerApi);
    const first = (await queriesDuring(() => post(a.ownerApi, ch, { text: 'one' }))).filter((q) => !isWakeUp(q));
    expect(first[0]).toBe('auth_credential');
    const next = (await queriesDuring(() => post(a.ownerApi, ch, { text: 'two' }))).filter((q) => !isWakeUp(q));
    expect(next).toEqual(['post_message']);
    const page = await queriesDuring(async () => expect((await a.ownerApi.get(`/channels/${ch}/messages`)).body.data).toHaveLength(2));
    expect(page).toEqual(['messages_page']);
    const read = await queriesDuring(async () => expect((await a.ownerApi.get(`/channels/${ch}`)).status).toBe(200));
    expect(read[0]).toBe('auth_credential');
    const keyed = await queriesDuring(async () =>
      expect((await a.ownerApi.post(`/channels/${ch}/messages`, { text: 'k' }).set('Idempotency-Key', '7d0b6f4e-2c7a-4d8e-9a51-3f1e2d4c5b6a')).status).toBe(201));
    expect(fullAuthentications(keyed)).toBe(1);
  });

  test('a post refused by its route is answered after a full authentication each time, remembered or not', async () => {
    const a = await messagingAccount(h);
    const ch = await makeChannel(a.ownerApi);
    const outsider = await addPerson(h, a.accountId, 'member');
    const caller = callerFor(h, a.accountId, await newKey(h, a.accountId, outsider.email, []), outsider.identity_id, outsider.email);
    for (let i = 0; i < 3; i++) {
      const sent = await queriesDuring(async () => expect((await caller.post(`/channels/${ch}/messages`, { text: 'x' })).body.error.code).toBe('not_a_member'));
      expect(fullAuthentications(sent)).toBe(1);
    }
  });

  test('a read-only key remembered through a read: its post is refused read_only_credential after a full authentication, nothing written', async () => {
    const a = await messagingAccount(h);
    const ch = await makeChannel(a.ownerApi);
    const caller = callerFor(h, a.accountId, await newKey(h, a.accountId, a.owner.email, [], { readOnly: true }), a.owner.identityId, a.owner.email);
    expect((await caller.get(`/channels/${ch}/messages`)).status).toBe(200);
    expect(fullAuthentications(await queriesDuring(async () => expect((await caller.get(`/channels/${ch}/messages`)).status).toBe(200)))).toBe(0);
    const sent = await queriesDuring(async () => {
      const res = await caller.post(`/channels/${ch}/messages`, { text: 'x' });
      expect(res.status).toBe(403);
      expect(res.body.error.reason).toBe('read_only_credential');
    });
    expect(fullAuthentications(sent)).toBe(1);
    expect(sent).not.toContain('post_message');
    expect(await messagesIn(ch)).toBe(0);
  });

  test('a post refused by authentication\'s own checks is not remembered: a read-only key is refused by a full authentication each time', async () => {
    const a = await messagingAccount(h);
    const ch = await makeChannel(a.ownerApi);
    const caller = callerFor(h, a.accountId, await newKey(h, a.accountId, a.owner.email, [], { readOnly: true }), a.owner.identityId, a.owner.email);
    for (let i = 0; i < 2; i++) {
      const sent = await queriesDuring(async () => expect((await caller.post(`/channels/${ch}/messages`, { text: 'x' })).status).toBe(403));
      expect(sent.filter((q) => q !== 'auth_credential_touch')).toEqual(['auth_credential']);
    }
  });
});

describe('whose authentication is remembered', () => {
  test('an agent token: remembered like an API key, and its revocation seen by the next post', async () => {
    const a = await messagingAccount(h);
    const ch = await makeChannel(a.ownerApi);
    const agent = await newAgent(h, a.accountId, a.owner.email, []);
    await addToChannel(a.ownerApi, ch, agent.identity.id);
    const caller = callerFor(h, a.accountId, agent.token, agent.identity.id, a.owner.email);
    expect((await post(caller, ch, { text: 'one' })).author).toBe(agent.identity.id);
    const sent = await queriesDuring(async () => expect((await post(caller, ch, { text: 'two' })).author).toBe(agent.identity.id));
    expect(fullAuthentications(sent)).toBe(0);
    await db().transaction((tx) => revokeCredential(tx, { accountId: a.accountId, credentialId: agent.credentialId }));
    expect((await caller.post(`/channels/${ch}/messages`, { text: 'three' })).status).toBe(401);
    expect(await messagesIn(ch)).toBe(2);
  });

  test('per account: a key of another account is refused not_a_member by a full authentication every time', async () => {
    const a = await messagingAccount(h);
    const b = await messagingAccount(h);
    const ch = await makeChannel(b.ownerApi);
    await post(a.ownerApi, await makeChannel(a.ownerApi), { text: 'remembered in its own account' });
    for (let i = 0; i < 2; i++) {
      const sent = await queriesDuring(async () =>
        expect((await request(h.api).post(`/accounts/${b.accountId}/channels/${ch}/messages`).set(bearer(a.ownerApi.key)).send({ text: 'x' })).body.error.code).toBe('not_a_member'));
      expect(fullAuthentications(sent)).toBe(1);
    }
    expect(await messagesIn(ch)).toBe(0);
  });

  test('never a web session: posts on the web host authenticate their session every time', async () => {
    const a = await messagingAccount(h);
    const ch = await makeChannel(a.ownerApi);
    const web = await signInWeb(h, a.owner.email);
    for (let i = 0; i < 2; i++) {
      const sent = await queriesDuring(async () =>
        expect((await web.agent.post(`/accounts/${a.accountId}/channels/${ch}/messages`).set('X-CSRF-Token', web.csrf).send({ text: 'w' })).status).toBe(201));
      expect(sent[0]).toBe('auth_session');
    }
  });
});

describe('Authentication 3 holds: what changed since the authentication was remembered is seen by the next post', () => {
  test('revoked: 401 at once, nothing written; later posts and reads 401 too', async () => {
    const r = await remembered();
    await db().transaction((tx) => revokeCredential(tx, { accountId: r.a.accountId, credentialId: r.credentialId }));
    const before = await messagesIn(r.ch);
    const res = await r.caller.post(`/channels/${r.ch}/messages`, { text: 'after the revocation' });
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('unauthorized');
    expect(await messagesIn(r.ch)).toBe(before);
    expect((await r.caller.post(`/channels/${r.ch}/messages`, { text: 'again' })).status).toBe(401);
    expect((await r.caller.get(`/channels/${r.ch}/messages`)).status).toBe(401);
    expect(await messagesIn(r.ch)).toBe(before);
  });

  test('a page of messages read from memory: revoked, 401 and no page; a changed role reads the page once, on a full authentication', async () => {
    const r = await remembered();
    const sent = await queriesDuring(async () => expect((await r.caller.get(`/channels/${r.ch}/messages`)).body.data).toHaveLength(2));
    expect(fullAuthentications(sent)).toBe(0);
    await db().transaction((tx) => setMemberRole(tx, { accountId: r.a.accountId, userId: r.userId, role: 'member' }));
    const changed = await queriesDuring(async () => expect((await r.caller.get(`/channels/${r.ch}/messages`)).body.data).toHaveLength(2));
    expect(changed.filter((q) => q === 'messages_page')).toHaveLength(2);
    expect(fullAuthentications(changed)).toBe(1);
    await db().transaction((tx) => revokeCredential(tx, { accountId: r.a.accountId, credentialId: r.credentialId }));
    const res = await r.caller.get(`/channels/${r.ch}/messages`);
    expect(res.status).toBe(401);
    expect(res.body.data).toBeUndefined();
  });

  test('last_used_at is still stamped at most once a minute by posts served from memory', async () => {
    const r = await remembered();
    const stamp = async () => (await db().select({ at: credentials.lastUsedAt }).from(credentials).where(eq(credentials.id, r.credentialId)))[0].at;
    const settle = () => new Promise((resolve) => setTimeout(resolve, 100)); // the stamp is written off the request's path
    await settle();
    const first = await stamp();
    expect(first).not.toBeNull();
    await post(r.caller, r.ch, { text: 'within the minute' });
    await settle();
    expect(await stamp()).toEqual(first);
    h.clock.advance(2 * 60_000);
    const sent = await queriesDuring(async () => { await post(r.caller, r.ch, { text: 'two minutes later' }); await settle(); });
    expect(fullAuthentications(sent)).toBe(0);
    expect((await stamp())!.getTime()).toBe(h.clock.now.getTime());
  });

  test('expired by the application clock: 401, nothing written', async () => {
    const r = await remembered({ expiresAt: new Date(Date.now() + 60 * 60_000) });
    h.clock.advance(61 * 60_000);
    const before = await messagesIn(r.ch);
    const res = await r.caller.post(`/channels/${r.ch}/messages`, { text: 'after expiry' });
    expect(res.status).toBe(401);
    expect(await messagesIn(r.ch)).toBe(before);
  });

  test('the account turned read-only, then suspended: answered as a full authentication answers, nothing written; active again, posts go through', async () => {
    const r = await remembered();
    const before = await messagesIn(r.ch);
    await db().transaction((tx) => setAccountState(tx, r.a.accountId, 'read_only'));
    expect((await r.caller.post(`/channels/${r.ch}/messages`, { text: 'x' })).body.error.code).toBe('read_only');
    await db().transaction((tx) => setAccountState(tx, r.a.accountId, 'suspended'));
    expect((await r.caller.post(`/channels/${r.ch}/messages`, { text: 'x' })).body.error.code).toBe('suspended');
    expect(await messagesIn(r.ch)).toBe(before);
    await db().transaction((tx) => setAccountState(tx, r.a.accountId, 'active'));
    await post(r.caller, r.ch, { text: 'active again' });
    expect(await messagesIn(r.ch)).toBe(before + 1);
  });

  test('the seat\'s role or the account\'s plan changed: the post is authenticated in full and written exactly once, then remembered afresh', async () => {
    const r = await remembered();
    await db().transaction((tx) => setMemberRole(tx, { accountId: r.a.accountId, userId: r.userId, role: 'member' }));
    const before = await messagesIn(r.ch);
    const sent = await queriesDuring(() => post(r.caller, r.ch, { text: 'as a member now' }));
    expect(sent.filter((q) => q === 'post_message')).toHaveLength(2); // the refused write, then the post
    expect(fullAuthentications(sent)).toBe(1);
    expect(await messagesIn(r.ch)).toBe(before + 1);
    expect(fullAuthentications(await queriesDuring(() => post(r.caller, r.ch, { text: 'remembered as a member' })))).toBe(0);

    await db().transaction((tx) => setAccountPlan(tx, r.a.accountId, 'scale'));
    const afterPlan = await queriesDuring(() => post(r.caller, r.ch, { text: 'on the new plan' }));
    expect(fullAuthentications(afterPlan)).toBe(1);
    expect(await messagesIn(r.ch)).toBe(before + 3);
  });

  test('every other answer waits for a full authentication: a revoked credential gets 401, not the input\'s or the channel\'s refusal', async () => {
    const r = await remembered();
    await db().transaction((tx) => revokeCredential(tx, { accountId: r.a.accountId, credentialId: r.credentialId }));
    expect((await r.caller.post('/channels/ch_doesnotexist/messages', { text: 'x' })).status).toBe(401);
    expect((await r.caller.post(`/channels/${r.ch}/messages`, { nope: true })).status).toBe(401);
    expect((await r.caller.post(`/channels/${r.ch}/messages`, { text: 'x', thread_ts: '1.000001' })).status).toBe(401);
  });

  test('a refusal that a full authentication agrees with is answered as before (the credential still valid)', async () => {
    const r = await remembered();
    expect((await r.caller.post('/channels/ch_doesnotexist/messages', { text: 'x' })).body.error.code).toBe('not_found');
    expect((await r.caller.post(`/channels/${r.ch}/messages`, { nope: true })).body.error.code).toBe('invalid_request');
    const other = await makeChannel(r.a.ownerApi);
    expect((await r.caller.post(`/channels/${other}/messages`, { text: 'x' })).body.error.code).toBe('not_a_member');
    // and it is still remembered
    expect(fullAuthentications(await queriesDuring(() => post(r.caller, r.ch, { text: 'still fine' })))).toBe(0);
  });

  test('a revocation committed while posts stream in: every post answered 201 is written, every one sent after it is 401 and writes nothing', async () => {
    const r = await remembered();
    const before = await messagesIn(r.ch);
    const answers: number[] = [];
    let revoked = false;
    // Posts one after another until five have been sent after the revocation committed.
    const stream = (async () => {
      let sentAfter = 0;
      for (let i = 0; sentAfter < 5 && i < 2_000; i++) {
        const sentAfterRevocation = revoked;
        const res = await r.caller.post(`/channels/${r.ch}/messages`, { text: `p${i}` });
        if (sentAfterRevocation) {
          expect(res.status).toBe(401);
          sentAfter++;
        }
        answers.push(res.status);
      }
    })();
    await new Promise((resolve) => setTimeout(resolve, 30));
    await db().transaction((tx) => revokeCredential(tx, { accountId: r.a.accountId, credentialId: r.credentialId }));
    revoked = true;
    await stream;
    expect(answers.every((s) => s === 201 || s === 401)).toBe(true);
    expect(answers.filter((s) => s === 401).length).toBeGreaterThan(0);
    expect(await messagesIn(r.ch)).toBe(before + answers.filter((s) => s === 201).length);
  });
});

/**
 * A route joins ROUTES_FROM_MEMORY only with its request here: its handler must run its statement
 * through runConfirmingAuthentication, or a revoked credential it remembered would still be
 * answered from memory. Each route is called from memory (no full authentication), then after a
 * revocation: 401, and nothing read or written.
 */
const FROM_MEMORY_REQUESTS: Record<string, (r: Remembered) => request.Test> = {
  postMessage: (r) => r.caller.post(`/channels/${r.ch}/messages`, { text: 'from memory' }),
  listMessages: (r) => r.caller.get(`/channels/${r.ch}/messages`),
};

describe('every route served from memory confirms the authentication it remembered', () => {
  test('the routes listed here are exactly ROUTES_FROM_MEMORY', () => {
    expect(Object.keys(FROM_MEMORY_REQUESTS).sort()).toEqual([...ROUTES_FROM_MEMORY].sort());
  });

  test.each(Object.keys(FROM_MEMORY_REQUESTS))('%s: served from memory, then 401 on the request after a revocation, nothing written', async (id) => {
    const r = await remembered();
    const call = FROM_MEMORY_REQUESTS[id];
    const sent = await queriesDuring(async () => expect((await call(r)).status).toBeLessThan(300));
    expect(fullAuthentications(sent)).toBe(0);
    await db().transaction((tx) => revokeCredential(tx, { accountId: r.a.accountId, credentialId: r.credentialId }));
    const before = await messagesIn(r.ch);
    const res = await call(r);
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('unauthorized');
    expect(res.body.data).toBeUndefined();
    expect(await messagesIn(r.ch)).toBe(before);
  });
});
