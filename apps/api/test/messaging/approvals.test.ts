import request from 'supertest';
import { startWorker, type RunningWorker } from '../../../worker/src/worker';
import { newAgent, signInWeb, startHarness, type Harness } from '../../../../test/support/harness';
import { addToChannel, byType, callerFor, eventsOf, makeChannel, memberCaller, messagingAccount, post, type Caller } from '../../../../test/support/messaging';

let h: Harness;
let worker: RunningWorker;
beforeAll(async () => {
  h = await startHarness({ limitsEnabled: false });
  // The webhook loops scoped to no account: other files' events are not this file's to relay.
  worker = startWorker(h.deps, { webhooks: { accountIds: [] } });
});
afterAll(async () => {
  await worker.close();
  await h.close();
});

async function waitForJob(caller: Caller, jobId: string) {
  for (let i = 0; i < 100; i++) {
    const res = await caller.get(`/jobs/${jobId}`);
    expect(res.status).toBe(200);
    if (res.body.status === 'succeeded' || res.body.status === 'failed') return res.body;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`job ${jobId} did not finish`);
}

const texts = async (caller: Caller, ch: string) =>
  (await caller.get(`/channels/${ch}/messages`)).body.data.map((m: { text: string }) => m.text);

describe('Approvals for destructive steps (spec: Authentication rule 10)', () => {
  test('delete through a key → 403 confirmation_required → approve on the web → the job finishes → the message is gone', async () => {
    const a = await messagingAccount(h);
    const ch = await makeChannel(a.ownerApi, 'general');
    const m = await post(a.ownerApi, ch, { text: 'delete me please' });
    await post(a.ownerApi, ch, { text: 'keep me' });

    const del = await a.ownerApi.del(`/channels/${ch}/messages/${m.ts}`);
    expect(del.status).toBe(403);
    expect(del.body.error.code).toBe('confirmation_required');
    const approvalId = del.body.error.approval_id as string;
    expect(approvalId).toMatch(/^apr_/);
    expect(del.body.error.approval_url).toBe(`http://web.test/accounts/${a.accountId}/approvals/${approvalId}`);
    // Asking again while it is pending returns the same approval; nothing is deleted yet.
    expect((await a.ownerApi.del(`/channels/${ch}/messages/${m.ts}`)).body.error.approval_id).toBe(approvalId);
    expect(await texts(a.ownerApi, ch)).toEqual(['keep me', 'delete me please']);

    const { agent, csrf } = await signInWeb(h, a.owner.email);
    const view = await agent.get(`/accounts/${a.accountId}/approvals/${approvalId}`);
    expect(view.status).toBe(200);
    expect(view.body).toMatchObject({
      id: approvalId, action: 'message.delete', status: 'pending', you_may_decide: true,
      target: { channel_id: ch, channel_name: 'general', ts: m.ts, exists: true, author: a.owner.identityId, text_preview: 'delete me please' },
      requested_by: { user_id: a.owner.userId, email: a.owner.email, identity_id: a.owner.identityId },
    });
    expect(view.body.summary).toContain(m.ts);

    const noCsrf = await agent.post(`/accounts/${a.accountId}/approvals/${approvalId}/approve`);
    expect(noCsrf.status).toBe(403);
    const approve = await agent.post(`/accounts/${a.accountId}/approvals/${approvalId}/approve`).set('X-CSRF-Token', csrf);
    expect(approve.status).toBe(202);
    expect(approve.body).toMatchObject({ id: approvalId, status: 'approved' });
    expect(approve.body.job_id).toMatch(/^job_/);

    const job = await waitForJob(a.ownerApi, approve.body.job_id);
    expect(job).toMatchObject({ type: 'message.delete', status: 'succeeded', result: { deleted: true, channel_id: ch, ts: m.ts } });
    expect(await texts(a.ownerApi, ch)).toEqual(['keep me']);
    const deleted = byType(await eventsOf(h, a.accountId), 'message.deleted');
    expect(deleted).toHaveLength(1);
    expect(deleted[0].data).toMatchObject({ ts: m.ts, deleted_by: a.owner.identityId, approval_id: approvalId });
    expect(JSON.stringify(deleted[0].data)).not.toContain('delete me please');
    // Deciding twice is refused (only the spec's error codes: 403 forbidden, never the non-spec 409 conflict).
    const twice = await agent.post(`/accounts/${a.accountId}/approvals/${approvalId}/deny`).set('X-CSRF-Token', csrf);
    expect(twice.status).toBe(403);
    expect(twice.body.error).toMatchObject({ code: 'forbidden', reason: 'already_decided' });
  });

  test('deny leaves the message and raises no event', async () => {
    const a = await messagingAccount(h);
    const ch = await makeChannel(a.ownerApi);
    const m = await post(a.ownerApi, ch, { text: 'stays' });
    const del = await a.ownerApi.del(`/channels/${ch}/messages/${m.ts}`);
    const { agent, csrf } = await signInWeb(h, a.owner.email);
    const deny = await agent.post(`/accounts/${a.accountId}/approvals/${del.body.error.approval_id}/deny`).set('X-CSRF-Token', csrf);
    expect(deny.status).toBe(200);
    expect(deny.body).toMatchObject({ status: 'denied', job_id: null });
    expect(await texts(a.ownerApi, ch)).toEqual(['stays']);
    expect((await agent.get(`/accounts/${a.accountId}/approvals/${del.body.error.approval_id}`)).body.status).toBe('denied');
    expect(byType(await eventsOf(h, a.accountId), 'message.deleted')).toHaveLength(0);
  });

  test('an agent token\'s delete also needs confirmation: its approving person (or an owner/admin) decides; another member may not', async () => {
    const a = await messagingAccount(h);
    const ch = await makeChannel(a.ownerApi);
    const bob = await memberCaller(h, a.accountId);
    const agentOut = await newAgent(h, a.accountId, bob.email, []);
    const bot = callerFor(h, a.accountId, agentOut.token, agentOut.identity.id, bob.email);
    await addToChannel(a.ownerApi, ch, bot.identityId);
    const m = await post(bot, ch, { text: 'bot says' });
    const del = await bot.del(`/channels/${ch}/messages/${m.ts}`);
    expect(del.status).toBe(403);
    expect(del.body.error.code).toBe('confirmation_required');
    const id = del.body.error.approval_id;
    const carol = await memberCaller(h, a.accountId);
    const carolWeb = await signInWeb(h, carol.email);
    expect((await carolWeb.agent.get(`/accounts/${a.accountId}/approvals/${id}`)).body.you_may_decide).toBe(false);
    const refused = await carolWeb.agent.post(`/accounts/${a.accountId}/approvals/${id}/approve`).set('X-CSRF-Token', carolWeb.csrf);
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('forbidden');
    const bobWeb = await signInWeb(h, bob.email);
    const ok = await bobWeb.agent.post(`/accounts/${a.accountId}/approvals/${id}/approve`).set('X-CSRF-Token', bobWeb.csrf);
    expect(ok.status).toBe(202);
    expect((await waitForJob(a.ownerApi, ok.body.job_id)).status).toBe('succeeded');
    expect(await texts(a.ownerApi, ch)).toEqual([]);
  });

  test('through a web session the delete happens at once; someone else\'s message is refused (403 forbidden)', async () => {
    const a = await messagingAccount(h);
    const bob = await memberCaller(h, a.accountId);
    const ch = await makeChannel(a.ownerApi);
    await addToChannel(a.ownerApi, ch, bob.identityId);
    const mine = await post(bob, ch, { text: 'bob 1' });
    const owners = await post(a.ownerApi, ch, { text: 'owner 1' });
    const bobWeb = await signInWeb(h, bob.email);
    const base = `/accounts/${a.accountId}/channels/${ch}/messages`;
    expect((await bobWeb.agent.delete(`${base}/${mine.ts}`).set('X-CSRF-Token', bobWeb.csrf)).status).toBe(204);
    const refused = await bobWeb.agent.delete(`${base}/${owners.ts}`).set('X-CSRF-Token', bobWeb.csrf);
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('forbidden');
    // Also through a key: refused before any approval is made.
    const viaKey = await bob.del(`/channels/${ch}/messages/${owners.ts}`);
    expect(viaKey.status).toBe(403);
    expect(viaKey.body.error.code).toBe('forbidden');
    expect(await texts(a.ownerApi, ch)).toEqual(['owner 1']);
    expect((await bobWeb.agent.delete(`${base}/${mine.ts}`).set('X-CSRF-Token', bobWeb.csrf)).status).toBe(404);
  });

  test('approvals expire after 24 hours; /approvals is web-session only; other accounts\' people are not members', async () => {
    const a = await messagingAccount(h);
    const ch = await makeChannel(a.ownerApi);
    const m = await post(a.ownerApi, ch, { text: 'x' });
    const id = (await a.ownerApi.del(`/channels/${ch}/messages/${m.ts}`)).body.error.approval_id;
    // A credential cannot decide (on the API host the web session is refused first).
    const viaKey = await request(h.api).post(`/accounts/${a.accountId}/approvals/${id}/approve`).set('Authorization', `Bearer ${a.ownerApi.key}`);
    expect(viaKey.status).toBe(403);
    expect(viaKey.body.error.reason).toBe('web_session_required');
    const stranger = await messagingAccount(h);
    const strangerWeb = await signInWeb(h, stranger.owner.email);
    expect((await strangerWeb.agent.get(`/accounts/${a.accountId}/approvals/${id}`)).body.error.code).toBe('not_a_member');
    // Through the stranger's own account, an approval of another account does not exist.
    expect((await strangerWeb.agent.get(`/accounts/${stranger.accountId}/approvals/${id}`)).status).toBe(404);
    expect((await strangerWeb.agent.get(`/accounts/${stranger.accountId}/approvals/apr_unknown`)).status).toBe(404);

    const { agent, csrf } = await signInWeb(h, a.owner.email);
    h.clock.advance(24 * 3600_000 + 1000);
    try {
      expect((await agent.get(`/accounts/${a.accountId}/approvals/${id}`)).body.status).toBe('expired');
      const late = await agent.post(`/accounts/${a.accountId}/approvals/${id}/approve`).set('X-CSRF-Token', csrf);
      expect(late.status).toBe(403);
      expect(late.body.error).toMatchObject({ code: 'forbidden', reason: 'expired' });
    } finally {
      h.clock.set(new Date());
    }
    expect(await texts(a.ownerApi, ch)).toEqual(['x']);
  });
});
