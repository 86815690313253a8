import { and, eq, jobs, messages } from '@teamchat/db';
import { getMemberByEmail, parseTs, setMemberRole } from '@teamchat/core';
import { startWorker } from '../../../worker/src/worker';
import { signInWeb, startHarness, type Harness } from '../../../../test/support/harness';
import { addToChannel, makeChannel, memberCaller, messagingAccount, post, type Caller, type MessagingAccount } from '../../../../test/support/messaging';

/**
 * Spec: Authentication rule 10 (a destructive step through a credential waits for a person).
 * The person approving must be able to do the step themselves, when they approve and again when
 * the job runs: on the web a delete needs membership of the channel (a DM is invisible to anyone
 * outside it) and the author's identity or an owner's or admin's role.
 */
let h: Harness;
beforeAll(async () => { h = await startHarness({ limitsEnabled: false }); });
afterAll(async () => { await h.close(); });

async function askToDelete(requester: Caller, ch: string, ts: string) {
  const del = await requester.del(`/channels/${ch}/messages/${ts}`);
  expect(del.body.error.code).toBe('confirmation_required');
  return del.body.error.approval_id as string;
}

async function messageLeft(ch: string, ts: string) {
  return (await h.deps.database.db.select().from(messages).where(and(eq(messages.channelId, ch), eq(messages.tsMicros, parseTs(ts))))).length;
}

async function finished(jobId: string) {
  for (let i = 0; i < 150; i++) {
    const [job] = await h.deps.database.db.select().from(jobs).where(eq(jobs.id, jobId));
    if (job.status === 'failed' || job.status === 'succeeded') return job;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`job ${jobId} did not finish`);
}

async function dmWithBob(a: MessagingAccount) {
  const bob = await memberCaller(h, a.accountId);
  const dm = await a.ownerApi.post('/dms', { members: [bob.identityId] });
  expect(dm.status).toBe(201);
  return { bob, dm: dm.body.id as string };
}

describe('who may approve a delete', () => {
  test('an admin outside a DM cannot approve deleting a message in it (they could not delete it themselves): 403, nothing deleted', async () => {
    const a = await messagingAccount(h);
    const { bob, dm } = await dmWithBob(a);
    const m = await post(bob, dm, { text: 'between the two of us' });
    const id = await askToDelete(a.ownerApi, dm, m.ts); // the owner, a member of the DM, asks through a key
    const admin = await memberCaller(h, a.accountId, 'admin');
    const web = await signInWeb(h, admin.email);
    expect((await web.agent.get(`/accounts/${a.accountId}/approvals/${id}`)).body.you_may_decide).toBe(false);
    const res = await web.agent.post(`/accounts/${a.accountId}/approvals/${id}/approve`).set('X-CSRF-Token', web.csrf);
    expect(res.status).toBe(403);
    expect(res.body.error).toMatchObject({ code: 'forbidden', reason: 'not_author' });
    expect(await messageLeft(dm, m.ts)).toBe(1);
    // The owner, inside the DM, may.
    const ownerWeb = await signInWeb(h, a.owner.email);
    expect((await ownerWeb.agent.get(`/accounts/${a.accountId}/approvals/${id}`)).body.you_may_decide).toBe(true);
  });

  test('an admin outside a regular channel cannot approve either (on the web they would have to join first)', async () => {
    const a = await messagingAccount(h);
    const ch = await makeChannel(a.ownerApi);
    const m = await post(a.ownerApi, ch, { text: 'x' });
    const id = await askToDelete(a.ownerApi, ch, m.ts);
    const admin = await memberCaller(h, a.accountId, 'admin');
    const web = await signInWeb(h, admin.email);
    const res = await web.agent.post(`/accounts/${a.accountId}/approvals/${id}/approve`).set('X-CSRF-Token', web.csrf);
    expect(res.status).toBe(403);
    await addToChannel(a.ownerApi, ch, admin.identityId);
    expect((await web.agent.post(`/accounts/${a.accountId}/approvals/${id}/approve`).set('X-CSRF-Token', web.csrf)).status).toBe(202);
  });

  test('the job re-checks the approver when it runs: an admin demoted meanwhile deletes nothing, the job fails forbidden', async () => {
    const a = await messagingAccount(h);
    const ch = await makeChannel(a.ownerApi);
    const admin = await memberCaller(h, a.accountId, 'admin');
    await addToChannel(a.ownerApi, ch, admin.identityId);
    const m = await post(a.ownerApi, ch, { text: 'survives a demoted approver' });
    const id = await askToDelete(a.ownerApi, ch, m.ts);
    const web = await signInWeb(h, admin.email);
    // No worker runs yet: the job waits on the queue while the approver is demoted.
    const approve = await web.agent.post(`/accounts/${a.accountId}/approvals/${id}/approve`).set('X-CSRF-Token', web.csrf);
    expect(approve.status).toBe(202);
    const seat = await getMemberByEmail(h.deps.database.db, a.accountId, admin.email);
    await h.deps.database.db.transaction((tx) => setMemberRole(tx, { accountId: a.accountId, userId: seat!.userId, role: 'member' }));
    const worker = startWorker(h.deps, { maintenanceIntervalMs: 60_000, webhooks: { accountIds: [] } });
    try {
      const job = await finished(approve.body.job_id);
      expect(job).toMatchObject({ status: 'failed', error: { code: 'forbidden', reason: 'approver_lost_rights' } });
    } finally {
      await worker.close();
    }
    expect(await messageLeft(ch, m.ts)).toBe(1);
  });

  test('two people approving at the same moment: exactly one 202 and one job; the other is already_decided', async () => {
    const a = await messagingAccount(h);
    const ch = await makeChannel(a.ownerApi);
    const admin = await memberCaller(h, a.accountId, 'admin');
    await addToChannel(a.ownerApi, ch, admin.identityId);
    const m = await post(a.ownerApi, ch, { text: 'once' });
    const id = await askToDelete(a.ownerApi, ch, m.ts);
    const [o, ad] = [await signInWeb(h, a.owner.email), await signInWeb(h, admin.email)];
    const answers = await Promise.all([o, ad].map((w) => w.agent.post(`/accounts/${a.accountId}/approvals/${id}/approve`).set('X-CSRF-Token', w.csrf)));
    expect(answers.map((r) => r.status).sort()).toEqual([202, 403]);
    expect(answers.find((r) => r.status === 403)!.body.error).toMatchObject({ code: 'forbidden', reason: 'already_decided' });
    const made = await h.deps.database.db.select().from(jobs).where(eq(jobs.accountId, a.accountId));
    expect(made).toHaveLength(1);
  });

  test('an approval of another account, through the decider\'s own account path: 404, nothing decided', async () => {
    const a = await messagingAccount(h);
    const b = await messagingAccount(h);
    const ch = await makeChannel(b.ownerApi);
    const m = await post(b.ownerApi, ch, { text: 'b' });
    const id = await askToDelete(b.ownerApi, ch, m.ts);
    const web = await signInWeb(h, a.owner.email);
    expect((await web.agent.get(`/accounts/${a.accountId}/approvals/${id}`)).status).toBe(404);
    const res = await web.agent.post(`/accounts/${a.accountId}/approvals/${id}/approve`).set('X-CSRF-Token', web.csrf);
    expect(res.status).toBe(404);
    expect(res.text).not.toContain(b.accountId);
    // And on the other account's path the person has no seat.
    expect((await web.agent.post(`/accounts/${b.accountId}/approvals/${id}/approve`).set('X-CSRF-Token', web.csrf)).body.error.code).toBe('not_a_member');
    expect(await messageLeft(ch, m.ts)).toBe(1);
  });
});
