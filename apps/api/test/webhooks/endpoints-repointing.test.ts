import { and, auditRecords, eq, notifications } from '@teamchat/db';
import { startWorker, type RunningWorker } from '@teamchat/worker/src/worker';
import { addPerson, newAccount, newKey, type Harness } from '../../../../test/support/harness';
import { startReceiver, type Receiver } from '../../../../test/support/https-receiver';
import { createEndpointRow, deliveriesOf, endpointRow, eventually, startWebhookHarness } from '../../../../test/support/webhooks';
import { keyClient, webClient, type Client } from './endpoint-helpers';

/**
 * docs/webhooks.md "Who reads what an endpoint sends": nobody receives, through an endpoint they
 * changed or replayed, text they could not read themselves; the custom Authorization value goes
 * only to the URL it was set for; a change of url or payload by someone other than the creator
 * makes them the creator, notifies the old creator, owners and admins, and is audited. Real API,
 * worker (fan-out and delivery), PostgreSQL, Redis and an HTTPS receiver on loopback.
 */
let h: Harness;
let rx: Receiver;
let worker: RunningWorker;
const accountIds: string[] = [];
beforeAll(async () => {
  h = await startWebhookHarness();
  rx = await startReceiver();
  worker = startWorker(h.deps, { maintenanceIntervalMs: 300, webhooks: { accountIds } });
});
afterAll(async () => {
  await worker.close();
  await rx.close();
  await h.close();
});

const uniquePath = (what: string) => `/${what}-${Math.random().toString(36).slice(2, 10)}`;
const at = (path: string) => rx.received.filter((r) => r.path === path);

/** An account with an owner, an admin and a member, each with a key (the owner and the admin also on the web host). */
async function team() {
  const a = await newAccount(h);
  accountIds.push(a.accountId);
  const admin = await addPerson(h, a.accountId, 'admin');
  const member = await addPerson(h, a.accountId, 'member');
  const key = async (email: string) => keyClient(h, a.accountId, await newKey(h, a.accountId, email, []));
  return {
    a, admin, member,
    ownerWeb: await webClient(h, a.accountId, a.owner.email),
    adminWeb: await webClient(h, a.accountId, admin.email),
    ownerKey: keyClient(h, a.accountId, await newKey(h, a.accountId, a.owner.email, ['webhooks:manage'])),
    adminKey: await key(admin.email),
    memberKey: await key(member.email),
  };
}

async function dmPost(from: Client, toIdentity: string, text: string): Promise<string> {
  const dm = await from.post('/dms', { members: [toIdentity] });
  expect([200, 201]).toContain(dm.status);
  const posted = await from.post(`/channels/${dm.body.id}/messages`, { text });
  expect(posted.status).toBe(201);
  return dm.body.id as string;
}

describe("repointing another's text-mode endpoint never reveals text the new creator cannot read", () => {
  test("owner repoints an admin's text, all-channels endpoint: the logged DM delivery's replay is refused (cannot_read_channel); later DM deliveries carry no text; the header is dropped; creator, notifications and audit follow", async () => {
    const t = await team();
    const adminPath = uniquePath('admin');
    const ownerPath = uniquePath('owner');
    const ep = await createEndpointRow(h, {
      accountId: t.a.accountId, createdByUserId: t.admin.user_id, url: rx.url(adminPath), payload: 'text', channels: 'all',
      events: ['message.posted', 'dm.received'], authorization: 'admin-receiver-token',
    });

    // A DM between the admin and a member reaches the admin's receiver with its text.
    const dmId = await dmPost(t.adminKey, t.member.identity_id, 'secret between admin and member');
    await eventually(async () => at(adminPath).length >= 1, 20_000, 'the DM delivery at the admin receiver');
    expect(at(adminPath).some((r) => r.body.includes('secret between admin and member'))).toBe(true);
    const logged = await eventually(async () => (await deliveriesOf(h, ep.id)).find((d) => d.status === 'delivered'), 20_000, 'the logged DM delivery');
    // The owner cannot read that DM.
    expect((await t.ownerKey.get(`/channels/${dmId}/messages`)).status).toBe(404);

    // The owner repoints the endpoint from the web host (it stays enabled).
    const patched = await t.ownerWeb.patch(`/webhooks/${ep.id}`, { url: rx.url(ownerPath) });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ enabled: true, created_by: t.a.owner.userId, authorization_set: false });
    expect((await endpointRow(h, ep.id)).createdByUserId).toBe(t.a.owner.userId);

    // Replaying the logged DM delivery to the new URL is refused; nothing reaches it.
    const replay = await t.ownerWeb.post(`/webhooks/${ep.id}/deliveries/${logged.id}/replay`);
    expect(replay.status).toBe(403);
    expect(replay.body.error).toMatchObject({ code: 'forbidden', reason: 'cannot_read_channel' });
    const replayKey = await t.ownerKey.post(`/webhooks/${ep.id}/deliveries/${logged.id}/replay`);
    expect([replayKey.status, replayKey.body.error?.reason]).toEqual([403, 'cannot_read_channel']);

    // A later DM between admin and member reaches the new URL without text (pointers body).
    await dmPost(t.adminKey, t.member.identity_id, 'second secret between admin and member');
    const [later] = await eventually(async () => { const r = at(ownerPath); return r.length >= 1 && r; }, 20_000, 'the later DM delivery at the owner receiver');
    expect(later.body).not.toContain('second secret');
    expect(JSON.parse(later.body).data?.text).toBeUndefined();
    expect(at(ownerPath).every((r) => r.headers.authorization === undefined)).toBe(true);
    // A channel the owner is in still gets its text: the gate is the new creator's memberships.
    const ch = await t.ownerKey.post('/channels', { name: `own-${Math.random().toString(36).slice(2, 8)}` });
    await t.ownerKey.post(`/channels/${ch.body.id}/messages`, { text: 'owner can read this' });
    await eventually(async () => at(ownerPath).some((r) => r.body.includes('owner can read this')), 20_000, 'the owner channel post with text');
    expect(at(ownerPath).every((r) => !r.body.includes('secret between'))).toBe(true);

    // The old creator, the owners and the admins are told; the audit log names the change.
    const notes = await h.deps.database.db.select().from(notifications)
      .where(and(eq(notifications.accountId, t.a.accountId), eq(notifications.kind, 'webhook.taken_over')));
    expect(notes.map((n) => n.userId).sort()).toEqual([t.a.owner.userId, t.admin.user_id].sort());
    expect(notes[0].data).toMatchObject({ endpoint_id: ep.id, reason: 'changed_by_other', fields: ['url'], previous_creator: t.admin.user_id, by: { user_id: t.a.owner.userId } });
    const [audit] = await h.deps.database.db.select().from(auditRecords)
      .where(and(eq(auditRecords.accountId, t.a.accountId), eq(auditRecords.action, 'webhook.updated'), eq(auditRecords.targetId, ep.id)));
    expect(audit.data).toMatchObject({ fields: expect.arrayContaining(['url', 'authorization']), created_by: { from: t.admin.user_id, to: t.a.owner.userId } });
  });

  test('the creator may still replay its own DM delivery (a member of the DM)', async () => {
    const t = await team();
    const path = uniquePath('own');
    const ep = await createEndpointRow(h, { accountId: t.a.accountId, createdByUserId: t.admin.user_id, url: rx.url(path), payload: 'text', events: ['message.posted'] });
    await dmPost(t.adminKey, t.member.identity_id, 'mine to replay');
    const logged = await eventually(async () => (await deliveriesOf(h, ep.id)).find((d) => d.status === 'delivered'), 20_000, 'the DM delivery');
    const replay = await t.adminWeb.post(`/webhooks/${ep.id}/deliveries/${logged.id}/replay`);
    expect(replay.status).toBe(200);
    expect(at(path).filter((r) => r.body.includes('mine to replay'))).toHaveLength(2);
  });

  test('switching payload to text by someone else makes them the creator: a DM they are not in arrives without text', async () => {
    const t = await team();
    const path = uniquePath('payload');
    const ep = await createEndpointRow(h, { accountId: t.a.accountId, createdByUserId: t.admin.user_id, url: rx.url(path), payload: 'pointers', events: ['message.posted'] });
    const patched = await t.ownerWeb.patch(`/webhooks/${ep.id}`, { payload: 'text' });
    expect(patched.status).toBe(200);
    expect(patched.body.created_by).toBe(t.a.owner.userId);
    await dmPost(t.adminKey, t.member.identity_id, 'payload switch secret');
    const [got] = await eventually(async () => { const r = at(path); return r.length >= 1 && r; }, 20_000, 'the DM delivery');
    expect(got.body).not.toContain('payload switch secret');
  });
});

describe('the custom Authorization value goes only to the URL it was set for', () => {
  test("a second admin repoints the owner's endpoint and sends a test event: no Authorization header arrives at the new URL", async () => {
    const t = await team();
    const ownerPath = uniquePath('owner-hdr');
    const newPath = uniquePath('admin-hdr');
    const ep = await createEndpointRow(h, { accountId: t.a.accountId, createdByUserId: t.a.owner.userId, url: rx.url(ownerPath), authorization: 'owner-only-value' });
    // Sanity: the header does go to the URL it was set for.
    expect((await t.ownerWeb.post(`/webhooks/${ep.id}/test`)).status).toBe(200);
    expect(at(ownerPath)[0].headers.authorization).toBe('Bearer owner-only-value');

    const patched = await t.adminWeb.patch(`/webhooks/${ep.id}`, { url: rx.url(newPath) });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ authorization_set: false, created_by: t.admin.user_id, enabled: true });
    const sent = await t.adminWeb.post(`/webhooks/${ep.id}/test`);
    expect(sent.body).toMatchObject({ status: 'delivered' });
    const [got] = at(newPath);
    expect(got.headers.authorization).toBeUndefined();
    expect(JSON.stringify(got.headers)).not.toContain('owner-only-value');
  });

  test('a URL change that sets a new value in the same request sends that value, only to the new URL', async () => {
    const t = await team();
    const newPath = uniquePath('with-hdr');
    const ep = await createEndpointRow(h, { accountId: t.a.accountId, createdByUserId: t.a.owner.userId, url: rx.url(uniquePath('old')), authorization: 'old-value' });
    const patched = await t.ownerWeb.patch(`/webhooks/${ep.id}`, { url: rx.url(newPath), authorization: 'new-value' });
    expect(patched.body).toMatchObject({ authorization_set: true, created_by: t.a.owner.userId });
    await t.ownerWeb.post(`/webhooks/${ep.id}/test`);
    expect(at(newPath)[0].headers.authorization).toBe('Bearer new-value');
    // The creator changing their own endpoint notifies nobody of a take-over.
    const notes = await h.deps.database.db.select().from(notifications)
      .where(and(eq(notifications.accountId, t.a.accountId), eq(notifications.kind, 'webhook.taken_over')));
    expect(notes).toEqual([]);
  });
});

describe('the delivery log never shows text its reader could not read', () => {
  test("an owner opening a logged DM delivery of an admin's text endpoint sees it with the body withheld; the admin, a member of the DM, sees the body", async () => {
    const t = await team();
    const path = uniquePath('log-view');
    const ep = await createEndpointRow(h, {
      accountId: t.a.accountId, createdByUserId: t.admin.user_id, url: rx.url(path), payload: 'text', channels: 'all',
      events: ['message.posted', 'dm.received'],
    });
    await dmPost(t.adminKey, t.member.identity_id, 'private words in a DM');
    const logged = await eventually(async () => (await deliveriesOf(h, ep.id)).find((d) => d.status === 'delivered'), 20_000, 'the logged DM delivery');

    const asOwner = await t.ownerWeb.get(`/webhooks/${ep.id}/deliveries/${logged.id}`);
    expect(asOwner.status).toBe(200);
    expect(asOwner.body.request).toMatchObject({ body: null, body_withheld: 'cannot_read_channel' });
    expect(JSON.stringify(asOwner.body)).not.toContain('private words in a DM');

    const asAdmin = await t.adminWeb.get(`/webhooks/${ep.id}/deliveries/${logged.id}`);
    expect(asAdmin.status).toBe(200);
    expect(asAdmin.body.request.body).toContain('private words in a DM');
  }, 60_000);
});
