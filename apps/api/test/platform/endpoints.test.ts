import request from 'supertest';
import { createJob, setAccountPlan, setAccountState, setMemberRole } from '@teamchat/core';
import { startWorker, type RunningWorker } from '@teamchat/worker/src/worker';
import { echoJob } from '../../../../test/support/jobs';
import { addPerson, bearer, newAccount, newAgent, newKey, signInWeb, startHarness, type Harness } from '../../../../test/support/harness';

let h: Harness;
let worker: RunningWorker;
beforeAll(async () => {
  h = await startHarness();
  // The webhook loops scoped to no account: other files' events are not this file's to relay.
  worker = startWorker(h.deps, { maintenanceIntervalMs: 500, webhooks: { accountIds: [] } });
});
afterAll(async () => {
  await worker.close();
  await h.close();
});

const ALL = ['account:manage', 'members:manage', 'identities:manage', 'credentials:manage', 'audit:read'];

test('GET /accounts/{id}: plan, state and seats', async () => {
  const a = await newAccount(h, 'starter');
  await addPerson(h, a.accountId, 'member');
  const key = await newKey(h, a.accountId, a.owner.email, ALL);
  const res = await request(h.api).get(`/accounts/${a.accountId}`).set(bearer(key));
  expect(res.status).toBe(200);
  expect(res.body).toMatchObject({ id: a.accountId, plan: 'starter', state: 'active', seats: 2 });
});

test('GET /members lists people with their roles', async () => {
  const a = await newAccount(h);
  const admin = await addPerson(h, a.accountId, 'admin');
  const key = await newKey(h, a.accountId, a.owner.email, ALL);
  const res = await request(h.api).get(`/accounts/${a.accountId}/members`).set(bearer(key));
  expect(res.status).toBe(200);
  expect(res.body.data).toEqual([
    expect.objectContaining({ user_id: a.owner.userId, identity_id: a.owner.identityId, email: a.owner.email, role: 'owner' }),
    expect.objectContaining({ user_id: admin.user_id, role: 'admin' }),
  ]);
  expect(res.body.next_cursor).toBeNull();
});

test('GET/POST /identities: people and agents; a registered agent gets a working token, shown once', async () => {
  const a = await newAccount(h);
  const key = await newKey(h, a.accountId, a.owner.email, ALL);
  const created = await request(h.api).post(`/accounts/${a.accountId}/identities`).set(bearer(key)).send({ name: 'deploy-bot', scopes: ['audit:read'], client_ref: 'c-1' });
  expect(created.status).toBe(201);
  expect(created.body).toMatchObject({ kind: 'agent', name: 'deploy-bot', approved_by_user_id: a.owner.userId, client_ref: 'c-1' });
  expect(created.body.token).toMatch(/^tc_agt_/);
  expect(created.body.scopes).toEqual(expect.arrayContaining(['channels:read', 'channels:write', 'audit:read']));
  const asAgent = await request(h.api).get(`/accounts/${a.accountId}/audit`).set(bearer(created.body.token));
  expect(asAgent.status).toBe(200);
  const list = await request(h.api).get(`/accounts/${a.accountId}/identities`).set(bearer(key));
  expect(list.body.data.map((i: { kind: string }) => i.kind)).toEqual(['person', 'agent']);
  expect(JSON.stringify(list.body)).not.toContain(created.body.token);
});

test('GET /api-keys: prefix, scopes and last use, never a secret', async () => {
  const a = await newAccount(h);
  const key = await newKey(h, a.accountId, a.owner.email, ALL);
  await newAgent(h, a.accountId, a.owner.email, []);
  await request(h.api).get(`/accounts/${a.accountId}`).set(bearer(key));
  const res = await request(h.api).get(`/accounts/${a.accountId}/api-keys`).set(bearer(key));
  expect(res.status).toBe(200);
  const text = JSON.stringify(res.body);
  expect(text).not.toContain(key);
  expect(text).not.toMatch(/secret|hash/i);
  const mine = res.body.data.find((k: { kind: string }) => k.kind === 'api_key');
  expect(key.startsWith(mine.prefix)).toBe(true);
  expect(mine.scopes).toEqual(expect.arrayContaining(ALL));
  expect(mine.last_used_at).not.toBeNull();
  expect(res.body.data.map((k: { kind: string }) => k.kind).sort()).toEqual(['agent_token', 'api_key']);
});

test('GET /jobs/{jobId}: a job runs in the worker and reports its result', async () => {
  const a = await newAccount(h);
  const key = await newKey(h, a.accountId, a.owner.email, ALL);
  const job = await createJob(h.deps.database.db, { accountId: a.accountId, type: echoJob.type, payload: { value: 42 } });
  const queued = await request(h.api).get(`/accounts/${a.accountId}/jobs/${job.id}`).set(bearer(key));
  expect(queued.body).toMatchObject({ id: job.id, type: 'test.echo', status: 'queued', result: null, error: null, finished_at: null });
  await h.deps.jobQueue.enqueue(job.id);
  let body = queued.body;
  for (let i = 0; i < 100 && body.status !== 'succeeded'; i++) {
    await new Promise((r) => setTimeout(r, 50));
    body = (await request(h.api).get(`/accounts/${a.accountId}/jobs/${job.id}`).set(bearer(key))).body;
  }
  expect(body).toMatchObject({ status: 'succeeded', result: { echoed: 42 }, error: null });
  expect(typeof body.created_at).toBe('string');
  expect(typeof body.finished_at).toBe('string');
});

test('a job whose enqueue was lost is picked up by the maintenance sweep', async () => {
  const a = await newAccount(h);
  const key = await newKey(h, a.accountId, a.owner.email, ALL);
  const job = await createJob(h.deps.database.db, { accountId: a.accountId, type: echoJob.type, payload: { value: 'swept' } });
  // Never enqueued: make it look old enough to be stranded.
  const { jobs, eq, sql } = await import('@teamchat/db');
  await h.deps.database.db.update(jobs).set({ createdAt: sql`now() - interval '1 minute'` }).where(eq(jobs.id, job.id));
  let status = 'queued';
  for (let i = 0; i < 100 && status !== 'succeeded'; i++) {
    await new Promise((r) => setTimeout(r, 50));
    status = (await request(h.api).get(`/accounts/${a.accountId}/jobs/${job.id}`).set(bearer(key))).body.status;
  }
  expect(status).toBe('succeeded');
});

test('a job left running by a dead worker is put back and run again', async () => {
  const a = await newAccount(h);
  const key = await newKey(h, a.accountId, a.owner.email, ALL);
  const job = await createJob(h.deps.database.db, { accountId: a.accountId, type: echoJob.type, payload: { value: 'again' } });
  const { jobs, eq, sql } = await import('@teamchat/db');
  await h.deps.database.db
    .update(jobs)
    .set({ status: 'running', startedAt: sql`now() - interval '11 minutes'`, createdAt: sql`now() - interval '11 minutes'` })
    .where(eq(jobs.id, job.id));
  let body = { status: 'running', result: null as unknown };
  for (let i = 0; i < 100 && body.status !== 'succeeded'; i++) {
    await new Promise((r) => setTimeout(r, 50));
    body = (await request(h.api).get(`/accounts/${a.accountId}/jobs/${job.id}`).set(bearer(key))).body;
  }
  expect(body).toMatchObject({ status: 'succeeded', result: { echoed: 'again' } });
});

test('a job of another account, or none, → 404', async () => {
  const a = await newAccount(h);
  const b = await newAccount(h);
  const key = await newKey(h, a.accountId, a.owner.email, ALL);
  const jobB = await createJob(h.deps.database.db, { accountId: b.accountId, type: echoJob.type, payload: {} });
  expect((await request(h.api).get(`/accounts/${a.accountId}/jobs/${jobB.id}`).set(bearer(key))).status).toBe(404);
  expect((await request(h.api).get(`/accounts/${a.accountId}/jobs/job_nope`).set(bearer(key))).status).toBe(404);
});

test('GET /audit records key creation and revocation, sign-ins, state, plan and role changes', async () => {
  const a = await newAccount(h);
  const admin = await addPerson(h, a.accountId, 'admin');
  const key = await newKey(h, a.accountId, a.owner.email, ALL);
  await signInWeb(h, a.owner.email);
  await h.deps.database.db.transaction((tx) => setMemberRole(tx, { accountId: a.accountId, userId: admin.user_id, role: 'member' }));
  await h.deps.database.db.transaction((tx) => setAccountPlan(tx, a.accountId, 'scale'));
  await h.deps.database.db.transaction((tx) => setAccountState(tx, a.accountId, 'read_only'));
  await h.deps.database.db.transaction((tx) => setAccountState(tx, a.accountId, 'active'));
  const res = await request(h.api).get(`/accounts/${a.accountId}/audit?limit=200`).set(bearer(key));
  expect(res.status).toBe(200);
  const actions = res.body.data.map((r: { action: string }) => r.action);
  expect(actions).toEqual(expect.arrayContaining([
    'account.created', 'member.added', 'api_key.created', 'auth.signed_in', 'member.role_changed', 'account.plan_changed', 'account.state_changed',
  ]));
  const role = res.body.data.find((r: { action: string }) => r.action === 'member.role_changed');
  expect(role).toMatchObject({ target: { type: 'user', id: admin.user_id }, data: { from: 'admin', to: 'member' } });
  // Newest first.
  expect(actions[0]).toBe('account.state_changed');
  const plan = res.body.data.find((r: { action: string }) => r.action === 'account.plan_changed');
  expect(plan.data).toEqual({ from: 'pro', to: 'scale' });
  expect(JSON.stringify(res.body)).not.toContain(key);
});
