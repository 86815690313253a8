import request from 'supertest';
import { createJob, registeredJobTypes } from '@teamchat/core';
import { startWorker, type RunningWorker } from '@teamchat/worker/src/worker';
import { flakyJob, flakyRuns, refusingJob } from '../../../test/support/jobs';
import { bearer, newAccount, newKey, startHarness, type Harness } from '../../../test/support/harness';
import { eventually } from '../../../test/support/webhooks';

let h: Harness;
let worker: RunningWorker;
beforeAll(async () => {
  h = await startHarness();
  // webhooks scoped to no account: this shared database's other files' events are not this worker's to relay
  worker = startWorker(h.deps, { maintenanceIntervalMs: 60_000, webhooks: { accountIds: [] } });
});
afterAll(async () => {
  await worker.close();
  await h.close();
});

async function waitFinished(accountId: string, key: string, jobId: string, ms = 15_000) {
  const until = Date.now() + ms;
  for (;;) {
    const body = (await request(h.api).get(`/accounts/${accountId}/jobs/${jobId}`).set(bearer(key))).body;
    if (body.status === 'succeeded' || body.status === 'failed' || Date.now() > until) return body;
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('jobs (docs/api.md "Jobs"): a job failing with anything but a domain error is retried with backoff', () => {
  test('a job that throws a plain Error once is retried by the real worker and succeeds', async () => {
    const a = await newAccount(h);
    const key = await newKey(h, a.accountId, a.owner.email, ['account:manage']);
    const job = await createJob(h.deps.database.db, { accountId: a.accountId, type: flakyJob.type, payload: { fail: 1 } });
    await h.deps.jobQueue.enqueue(job.id);
    const body = await waitFinished(a.accountId, key, job.id);
    expect(body).toMatchObject({ status: 'succeeded', result: { runs: 2 }, error: null });
    expect(flakyRuns.get(job.id)).toBe(2);
  });

  test('a domain error (AppError) fails the job at once, without a retry', async () => {
    const a = await newAccount(h);
    const key = await newKey(h, a.accountId, a.owner.email, ['account:manage']);
    const job = await createJob(h.deps.database.db, { accountId: a.accountId, type: refusingJob.type, payload: {} });
    await h.deps.jobQueue.enqueue(job.id);
    const body = await waitFinished(a.accountId, key, job.id);
    expect(body).toMatchObject({ status: 'failed', error: { code: 'not_found' } });
    await new Promise((r) => setTimeout(r, 1_500)); // longer than the first backoff: no second run
    expect(flakyRuns.get(job.id)).toBe(1);
  });

  test('a job added to the queue twice (the approval\'s add that timed out, then the maintenance pass\'s) runs once (docs/limits.md)', async () => {
    const a = await newAccount(h);
    const key = await newKey(h, a.accountId, a.owner.email, ['account:manage']);
    const job = await createJob(h.deps.database.db, { accountId: a.accountId, type: flakyJob.type, payload: { fail: 0 } });
    await Promise.all([h.deps.jobQueue.enqueue(job.id), h.deps.jobQueue.enqueue(job.id)]);
    await h.deps.jobQueue.enqueue(job.id);
    const body = await waitFinished(a.accountId, key, job.id);
    expect(body).toMatchObject({ status: 'succeeded', result: { runs: 1 }, error: null });
    // Once finished, BullMQ still holds the job (removeOnComplete keeps the last 1,000), so an add
    // is ignored too: the job stays completed instead of waiting to run again.
    const queued = () => h.deps.jobQueue.queue.getJob(job.id);
    await eventually(async () => (await (await queued())?.getState()) === 'completed', 5_000, 'BullMQ to mark the job completed');
    const finishedAt = (await queued())!.finishedOn;
    await h.deps.jobQueue.enqueue(job.id);
    expect(await (await queued())!.getState()).toBe('completed');
    expect((await queued())!.finishedOn).toBe(finishedAt);
    expect(flakyRuns.get(job.id)).toBe(1);
  });

  test('only when the attempts are spent is the job failed', async () => {
    const a = await newAccount(h);
    const key = await newKey(h, a.accountId, a.owner.email, ['account:manage']);
    const job = await createJob(h.deps.database.db, { accountId: a.accountId, type: flakyJob.type, payload: { fail: 10 } });
    // Same message as JobQueue.enqueue, with 3 attempts and a short backoff so the test is quick.
    await h.deps.jobQueue.queue.add('run', { jobId: job.id }, { jobId: job.id, attempts: 3, backoff: { type: 'fixed', delay: 50 } });
    const body = await waitFinished(a.accountId, key, job.id);
    expect(body).toMatchObject({ status: 'failed', error: { code: 'internal', attempts: 3 } });
    expect(flakyRuns.get(job.id)).toBe(3);
  });
});

test('production code registers no test-only job type', () => {
  jest.isolateModules(() => {
    // A fresh module registry: only what the worker process loads, without test/support.
    require('@teamchat/worker/src/worker');
    const types = (require('@teamchat/core') as { registeredJobTypes(): string[] }).registeredJobTypes();
    expect(types).toContain('message.delete');
    expect(types).toContain('webhook.replay_failed');
    expect(types.filter((t) => t.startsWith('test.') || t === 'echo')).toEqual([]);
  });
  // Sanity: in this module registry the test types are there, because this file imported them.
  expect(registeredJobTypes()).toEqual(expect.arrayContaining(['test.flaky', 'test.refusing']));
});
