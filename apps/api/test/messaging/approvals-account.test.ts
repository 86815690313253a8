import request from 'supertest';
import { and, eq, messages } from '@teamchat/db';
import { parseTs, setAccountState } from '@teamchat/core';
import { startWorker } from '../../../worker/src/worker';
import { signInWeb, startHarness, type Harness } from '../../../../test/support/harness';
import { addToChannel, makeChannel, memberCaller, messagingAccount, post, type MessagingAccount } from '../../../../test/support/messaging';

// Limits on (with the harness's unlimited plans), so the account routes' charging is visible.
let h: Harness;
beforeAll(async () => { h = await startHarness(); });
afterAll(async () => { await h.close(); });

async function askToDelete(a: MessagingAccount, ch: string, text: string) {
  const m = await post(a.ownerApi, ch, { text });
  const del = await a.ownerApi.del(`/channels/${ch}/messages/${m.ts}`);
  expect(del.body.error.code).toBe('confirmation_required');
  return { ts: m.ts, id: del.body.error.approval_id as string, url: del.body.error.approval_url as string };
}

const setState = (accountId: string, state: 'active' | 'read_only' | 'suspended') =>
  h.deps.database.db.transaction((tx) => setAccountState(tx, accountId, state));

describe('Hosts rule 2: approvals live under their account', () => {
  test('approval_url points at /accounts/{accountId}/approvals/{approvalId} on the web host; the root path is gone', async () => {
    const a = await messagingAccount(h);
    const ch = await makeChannel(a.ownerApi);
    const { id, url } = await askToDelete(a, ch, 'x');
    expect(url).toBe(`http://web.test/accounts/${a.accountId}/approvals/${id}`);
    const { agent, csrf } = await signInWeb(h, a.owner.email);
    expect((await agent.get(new URL(url).pathname)).status).toBe(200);
    const root = await agent.get(`/approvals/${id}`);
    expect(root.status).toBe(404);
    expect((await agent.post(`/approvals/${id}/approve`).set('X-CSRF-Token', csrf)).status).toBe(404);
  });

  test("the account's checks run: state (read_only, suspended) and the seat's limits", async () => {
    const a = await messagingAccount(h);
    const ch = await makeChannel(a.ownerApi);
    const { id } = await askToDelete(a, ch, 'x');
    const { agent, csrf } = await signInWeb(h, a.owner.email);
    const path = `/accounts/${a.accountId}/approvals/${id}`;
    const ok = await agent.get(path);
    expect(ok.status).toBe(200);
    // Charged like every account route: the per-minute limiter and the daily units ran.
    expect(ok.headers['x-call-units-cost']).toBe('1');
    expect(ok.headers.ratelimit).toBeDefined();
    for (const state of ['read_only', 'suspended'] as const) {
      await setState(a.accountId, state);
      expect((await agent.get(path)).body.error.code).toBe(state);
      const approve = await agent.post(`${path}/approve`).set('X-CSRF-Token', csrf);
      expect(approve.status).toBe(403);
      expect(approve.body.error.code).toBe(state);
    }
    await setState(a.accountId, 'active');
    expect((await agent.get(path)).body.status).toBe('pending');
  });

  test('the preview of the text is shown only to a person who can read that channel', async () => {
    const a = await messagingAccount(h);
    const bob = await memberCaller(h, a.accountId);
    const carol = await memberCaller(h, a.accountId);
    const admin = await memberCaller(h, a.accountId, 'admin');
    const ch = await makeChannel(a.ownerApi, 'secret-plans');
    await addToChannel(a.ownerApi, ch, bob.identityId);
    const { id } = await askToDelete(a, ch, 'the launch is on friday');
    const view = async (email: string) => (await (await signInWeb(h, email)).agent.get(`/accounts/${a.accountId}/approvals/${id}`)).body;

    expect((await view(bob.email)).target).toMatchObject({ can_read_channel: true, channel_name: 'secret-plans', text_preview: 'the launch is on friday' });
    const carolView = await view(carol.email);
    expect(carolView.target).toMatchObject({ can_read_channel: false, channel_name: null, text_preview: null, exists: true });
    expect(JSON.stringify(carolView)).not.toContain('friday');
    // An admin may see a regular channel's name (as on GET /channels/{id}), not its messages.
    const adminView = await view(admin.email);
    expect(adminView.target).toMatchObject({ can_read_channel: false, channel_name: 'secret-plans', text_preview: null });
    expect(JSON.stringify(adminView)).not.toContain('friday');
  });

  test("in a DM, only its members see the preview; an admin outside it sees neither text nor name", async () => {
    const a = await messagingAccount(h);
    const bob = await memberCaller(h, a.accountId);
    const admin = await memberCaller(h, a.accountId, 'admin');
    const dm = await a.ownerApi.post('/dms', { members: [bob.identityId] });
    expect(dm.status).toBe(201);
    const { id } = await askToDelete(a, dm.body.id, 'just between us');
    const view = async (email: string) => (await (await signInWeb(h, email)).agent.get(`/accounts/${a.accountId}/approvals/${id}`)).body;
    expect((await view(bob.email)).target).toMatchObject({ can_read_channel: true, text_preview: 'just between us' });
    const adminView = await view(admin.email);
    expect(adminView.target).toMatchObject({ channel_kind: 'dm', can_read_channel: false, channel_name: null, text_preview: null });
    expect(JSON.stringify(adminView)).not.toContain('between us');
  });

  test('an approved job re-checks the account state when it runs: a read-only account runs nothing, the job fails clearly', async () => {
    const a = await messagingAccount(h);
    const ch = await makeChannel(a.ownerApi);
    const { id, ts } = await askToDelete(a, ch, 'survives');
    const { agent, csrf } = await signInWeb(h, a.owner.email);
    // No worker runs yet: the job waits on the queue while the account turns read-only.
    const approve = await agent.post(`/accounts/${a.accountId}/approvals/${id}/approve`).set('X-CSRF-Token', csrf);
    expect(approve.status).toBe(202);
    await setState(a.accountId, 'read_only');
    // webhooks scoped to no account: this shared database's other files' events are not this worker's to relay
    const worker = startWorker(h.deps, { maintenanceIntervalMs: 60_000, webhooks: { accountIds: [] } });
    try {
      const { jobs } = await import('@teamchat/db');
      let job;
      for (let i = 0; i < 100; i++) {
        [job] = await h.deps.database.db.select().from(jobs).where(eq(jobs.id, approve.body.job_id));
        if (job.status === 'failed' || job.status === 'succeeded') break;
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(job).toMatchObject({ status: 'failed', error: { code: 'read_only' } });
      expect((job!.error as { message: string }).message).toMatch(/read-only.*ran nothing/);
    } finally {
      await worker.close();
    }
    const left = await h.deps.database.db.select().from(messages).where(and(eq(messages.channelId, ch), eq(messages.tsMicros, parseTs(ts))));
    expect(left).toHaveLength(1);
    // Once active again, the account reads the failed job like any other.
    await setState(a.accountId, 'active');
    expect((await request(h.api).get(`/accounts/${a.accountId}/jobs/${approve.body.job_id}`).set('Authorization', `Bearer ${a.ownerApi.key}`)).body)
      .toMatchObject({ status: 'failed', error: { code: 'read_only' } });
  });
});
