import { and, auditRecords, eq, mirrorDeliveries } from '@teamchat/db';
import { addPerson, newAccount, newKey, type Harness } from '../../../../test/support/harness';
import { callerFor, makeChannel, memberCaller, type Caller } from '../../../../test/support/messaging';
import { startReceiver, type Receiver } from '../../../../test/support/https-receiver';
import { startWebhookHarness } from '../../../../test/support/webhooks';
import { keyClient, webClient, type Client } from '../webhooks/endpoint-helpers';

/**
 * The mirror API (docs/mirrors.md "API"): web session only, owners and admins only, channels
 * only and only channels the creator reads; each route's answer and refusals; the test send.
 */
let h: Harness;
let receiver: Receiver;
beforeAll(async () => {
  h = await startWebhookHarness();
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver.close();
  await h.close();
});

interface MirrorAccount {
  accountId: string;
  web: Client;
  key: Client;
  owner: Caller;
  channelId: string;
}

async function mirrorAccount(): Promise<MirrorAccount> {
  const a = await newAccount(h);
  const rawKey = await newKey(h, a.accountId, a.owner.email, ['webhooks:manage']);
  const owner = callerFor(h, a.accountId, rawKey, a.owner.identityId, a.owner.email);
  return { accountId: a.accountId, web: await webClient(h, a.accountId, a.owner.email), key: keyClient(h, a.accountId, rawKey), owner, channelId: await makeChannel(owner) };
}

const create = (a: MirrorAccount, body: Record<string, unknown> = {}) =>
  a.web.post('/mirrors', { url: receiver.url('/mirror'), channels: [a.channelId], format: 'slack', ...body });

describe('mirror routes', () => {
  test('POST → 201 with exactly the contract fields; GET one and the list answer the same mirror', async () => {
    const a = await mirrorAccount();
    const res = await create(a, { format: 'discord' });
    expect(res.status).toBe(201);
    expect(Object.keys(res.body).sort()).toEqual(['channels', 'created_at', 'created_by', 'disabled_reason', 'enabled', 'format', 'health', 'id', 'url'].sort());
    expect(res.body).toMatchObject({ url: receiver.url('/mirror'), channels: [a.channelId], format: 'discord', enabled: true, disabled_reason: null });
    expect(res.body.id).toMatch(/^mir_/);
    expect(res.body.health).toMatchObject({ attempts_24h: 0, pending_count: 0, last_success_at: null });
    const one = await a.web.get(`/mirrors/${res.body.id}`);
    expect(one.status).toBe(200);
    expect(one.body).toEqual(res.body);
    const list = await a.web.get('/mirrors');
    expect(list.status).toBe(200);
    expect(list.body).toEqual({ data: [res.body], next_cursor: null });
    const audit = await h.deps.database.db.select().from(auditRecords).where(and(eq(auditRecords.accountId, a.accountId), eq(auditRecords.action, 'mirror.created')));
    expect(audit).toHaveLength(1);
  });

  test('enabled: false creates it disabled (manual)', async () => {
    const a = await mirrorAccount();
    const res = await create(a, { enabled: false });
    expect(res.body).toMatchObject({ enabled: false, disabled_reason: 'manual' });
  });

  test('the list is cursor-paged like every list; a foreign cursor is invalid_cursor', async () => {
    const a = await mirrorAccount();
    for (let i = 0; i < 3; i++) expect((await create(a)).status).toBe(201);
    const first = await a.web.get('/mirrors?limit=2');
    expect(first.body.data).toHaveLength(2);
    expect(first.body.next_cursor).toEqual(expect.any(String));
    const second = await a.web.get(`/mirrors?limit=2&cursor=${encodeURIComponent(first.body.next_cursor)}`);
    expect(second.body.data).toHaveLength(1);
    expect(second.body.next_cursor).toBeNull();
    const b = await mirrorAccount();
    const foreign = await b.web.get(`/mirrors?limit=2&cursor=${encodeURIComponent(first.body.next_cursor)}`);
    expect(foreign.status).toBe(400);
    expect(foreign.body.error.code).toBe('invalid_cursor');
  });

  test('Idempotency-Key on the creating POST: a replay answers the same mirror, no second one', async () => {
    const a = await mirrorAccount();
    const key = '0b9d4d8e-1d51-4c1e-9a53-6f2b8d8c1a11';
    const body = { url: receiver.url('/mirror'), channels: [a.channelId], format: 'slack' };
    const first = await a.web.post('/mirrors', body).set('Idempotency-Key', key);
    const again = await a.web.post('/mirrors', body).set('Idempotency-Key', key);
    expect(first.status).toBe(201);
    expect(again.status).toBe(201);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body.id).toBe(first.body.id);
    expect((await a.web.get('/mirrors')).body.data).toHaveLength(1);
  });

  test('PATCH changes format, channels and enabled; DELETE removes it (404 afterwards)', async () => {
    const a = await mirrorAccount();
    const m = (await create(a)).body;
    const other = await makeChannel(a.owner);
    const patched = await a.web.patch(`/mirrors/${m.id}`, { format: 'teams', channels: [a.channelId, other], enabled: false });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ format: 'teams', channels: [a.channelId, other], enabled: false, disabled_reason: 'manual' });
    const on = await a.web.patch(`/mirrors/${m.id}`, { enabled: true });
    expect(on.body).toMatchObject({ enabled: true, disabled_reason: null });
    expect((await a.web.patch(`/mirrors/${m.id}`, {})).status).toBe(400);
    expect((await a.web.del(`/mirrors/${m.id}`)).status).toBe(204);
    expect((await a.web.get(`/mirrors/${m.id}`)).status).toBe(404);
    expect((await a.web.get('/mirrors')).body.data).toHaveLength(0);
  });

  test('POST .../test sends one test line now and answers the result; the log lists it', async () => {
    const a = await mirrorAccount();
    const m = (await create(a, { format: 'google_chat' })).body;
    const before = receiver.received.length;
    const res = await a.web.post(`/mirrors/${m.id}/test`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ kind: 'test', status: 'delivered', response_status: 200, attempt: 1 });
    expect(receiver.received.length).toBe(before + 1);
    const got = receiver.received[before];
    expect(JSON.parse(got.body)).toEqual({ text: expect.stringContaining('mirror test') });
    expect(got.headers.authorization).toBeUndefined();
    const log = await a.web.get(`/mirrors/${m.id}/deliveries`);
    expect(log.status).toBe(200);
    expect(log.body.data).toEqual([res.body]);
    expect(log.body.next_cursor).toBeNull();
    const health = (await a.web.get(`/mirrors/${m.id}`)).body.health;
    expect(health).toMatchObject({ attempts_24h: 1, success_rate_24h: 1 });
  });

  test('test sends are limited like webhook test events: 10 a minute per mirror, then 429 rate_limited', async () => {
    const a = await mirrorAccount();
    const m = (await create(a)).body;
    for (let i = 0; i < 10; i++) expect((await a.web.post(`/mirrors/${m.id}/test`)).status).toBe(200);
    const over = await a.web.post(`/mirrors/${m.id}/test`);
    expect(over.status).toBe(429);
    expect(over.body.error.code).toBe('rate_limited');
    expect(over.headers['retry-after']).toEqual(expect.any(String));
  });

  test('a failing test answers failed (never retried)', async () => {
    const a = await mirrorAccount();
    const m = (await create(a)).body;
    receiver.script({ status: 500 });
    const res = await a.web.post(`/mirrors/${m.id}/test`);
    expect(res.body).toMatchObject({ kind: 'test', status: 'failed', response_status: 500, error: 'receiver answered 500' });
    const rows = await h.deps.database.db.select().from(mirrorDeliveries).where(eq(mirrorDeliveries.mirrorId, m.id));
    expect(rows).toHaveLength(1);
  });
});

describe('mirror refusals', () => {
  test('an API key or agent credential → 403 forbidden, web_session_required, on every route', async () => {
    const a = await mirrorAccount();
    const m = (await create(a)).body;
    const attempts = [
      a.key.get('/mirrors'),
      a.key.post('/mirrors', { url: receiver.url('/mirror'), channels: [a.channelId], format: 'slack' }),
      a.key.get(`/mirrors/${m.id}`),
      a.key.patch(`/mirrors/${m.id}`, { enabled: false }),
      a.key.del(`/mirrors/${m.id}`),
      a.key.get(`/mirrors/${m.id}/deliveries`),
      a.key.post(`/mirrors/${m.id}/test`),
    ];
    for (const res of await Promise.all(attempts)) {
      expect(res.status).toBe(403);
      expect(res.body.error).toMatchObject({ code: 'forbidden', reason: 'web_session_required' });
    }
    expect((await a.web.get(`/mirrors/${m.id}`)).body.enabled).toBe(true);
  });

  test('a member on the web → 403 forbidden; an admin may', async () => {
    const a = await mirrorAccount();
    const member = await addPerson(h, a.accountId, 'member');
    const memberWeb = await webClient(h, a.accountId, member.email);
    const res = await memberWeb.post('/mirrors', { url: receiver.url('/mirror'), channels: [a.channelId], format: 'slack' });
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('forbidden');
    expect((await memberWeb.get('/mirrors')).status).toBe(403);
    const admin = await addPerson(h, a.accountId, 'admin');
    const adminWeb = await webClient(h, a.accountId, admin.email);
    expect((await adminWeb.get('/mirrors')).status).toBe(200);
  });

  test('another account\'s mirror is 404 not_found; another account\'s channel is unknown_channel', async () => {
    const a = await mirrorAccount();
    const b = await mirrorAccount();
    const m = (await create(a)).body;
    for (const res of [await b.web.get(`/mirrors/${m.id}`), await b.web.patch(`/mirrors/${m.id}`, { enabled: false }), await b.web.del(`/mirrors/${m.id}`),
      await b.web.get(`/mirrors/${m.id}/deliveries`), await b.web.post(`/mirrors/${m.id}/test`)]) {
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('not_found');
    }
    const res = await create(b, { channels: [a.channelId] });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'invalid_request', field: 'channels', reason: 'unknown_channel' });
  });

  test('a DM id → 400 naming the field channels (dm_not_allowed); someone else\'s DM is unknown_channel', async () => {
    const a = await mirrorAccount();
    const bob = await memberCaller(h, a.accountId);
    const carol = await memberCaller(h, a.accountId);
    const dm = await a.owner.post('/dms', { members: [bob.identityId] });
    expect(dm.status).toBe(201);
    const res = await create(a, { channels: [a.channelId, dm.body.id] });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'invalid_request', field: 'channels', reason: 'dm_not_allowed' });
    const theirs = await bob.post('/dms', { members: [carol.identityId] });
    const other = await create(a, { channels: [theirs.body.id] });
    expect(other.body.error).toMatchObject({ field: 'channels', reason: 'unknown_channel' });
    expect((await a.web.patch('/mirrors/mir_nothing', { channels: [dm.body.id] })).status).toBe(404);
  });

  test('a channel the creator cannot read (not a member) → 400 not_a_member, on create and on change', async () => {
    const a = await mirrorAccount();
    const bob = await memberCaller(h, a.accountId);
    const bobs = await makeChannel(bob);
    const res = await create(a, { channels: [bobs] });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ field: 'channels', reason: 'not_a_member' });
    const m = (await create(a)).body;
    const patched = await a.web.patch(`/mirrors/${m.id}`, { channels: [bobs] });
    expect(patched.body.error).toMatchObject({ field: 'channels', reason: 'not_a_member' });
  });

  test('the URL guard at registration: http and private addresses refused, naming url', async () => {
    const a = await mirrorAccount();
    const http = await create(a, { url: 'http://example.com/hook' });
    expect(http.status).toBe(400);
    expect(http.body.error).toMatchObject({ field: 'url', reason: 'not_https' });
    const priv = await create(a, { url: 'https://10.0.0.1/hook' });
    expect(priv.body.error).toMatchObject({ field: 'url', reason: 'private_address' });
  });

  test('bad input: unknown format, empty channels, a malformed url → 400 invalid_request', async () => {
    const a = await mirrorAccount();
    for (const body of [{ format: 'irc' }, { channels: [] }, { url: 'not a url' }]) {
      const res = await create(a, body);
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('invalid_request');
    }
  });
});

describe('who reads what a mirror sends', () => {
  test("an admin who changes another's mirror URL becomes its creator (its text gated by their memberships, its sends on their seat), audited", async () => {
    const a = await mirrorAccount();
    const admin = await addPerson(h, a.accountId, 'admin');
    const adminWeb = await webClient(h, a.accountId, admin.email);
    const created = await create(a);
    expect(created.status).toBe(201);
    const patched = await adminWeb.patch(`/mirrors/${created.body.id}`, { url: receiver.url('/taken-over') });
    expect(patched.status).toBe(200);
    expect(patched.body.created_by).toBe(admin.user_id);
    const audit = await h.deps.database.db.select().from(auditRecords).where(and(eq(auditRecords.accountId, a.accountId), eq(auditRecords.action, 'mirror.updated')));
    expect(audit[0].data).toMatchObject({ created_by: { to: admin.user_id } });
    // From now on the fan-out gates its lines by the admin's memberships (a creator who is not a
    // member of a channel gets no lines: packages/delivery/test/mirror-lines.test.ts).
  }, 30_000);
});
