import { createJob, randomToken } from '@teamchat/core';
import { webhookQueuesFor } from '@teamchat/delivery';
import { startWorker, type RunningWorker } from '@teamchat/worker/src/worker';
import { newAccount, startHarness, type Harness } from '../../../test/support/harness';
import { echoJob } from '../../../test/support/jobs';
import { testRedisServer, type TestRedisServer } from '../../../test/support/redis-server';
import { tcpProxy, type TcpProxy } from '../../../test/support/tcp-proxy';
import { eventually } from '../../../test/support/webhooks';

/**
 * A worker's queue consumers (the job runner, the fan-out and delivery wake-ups) wait on Redis
 * without a command timeout. When their connection goes silent (the Redis host lost, a failover
 * that moved its address: no reset reaches the worker) BullMQ replaces its own blocking
 * connection, but the consumer's other connection, on which it takes and finishes jobs, stays
 * `ready` and waits until TCP gives up, about 15 minutes. Every consumer connection is watched
 * (watchRedisConnection) and replaced within seconds (docs/limits.md "When Redis is away").
 * A real redis-server behind a TCP proxy that strands the open connections.
 */
jest.setTimeout(90_000);

let server: TestRedisServer;
let proxy: TcpProxy;
let h: Harness;
let worker: RunningWorker;
beforeAll(async () => {
  server = await testRedisServer();
  proxy = await tcpProxy({ host: '127.0.0.1', port: server.port });
  h = await startHarness({ redisUrl: `redis://127.0.0.1:${proxy.port}`, redisPrefix: `test-silent-worker-${randomToken(8)}` });
  // webhooks scoped to no account: this shared database's other files' events are not this worker's to relay
  worker = startWorker(h.deps, { maintenanceIntervalMs: 60_000, webhooks: { accountIds: [] } });
});
afterAll(async () => {
  await worker?.close();
  await h?.close();
  await proxy?.close();
  await server?.stop();
});

/** Adds through the producer's connection, trying again while it is still being replaced. */
async function addOnceAnswered(add: () => Promise<unknown>): Promise<void> {
  await eventually(async () => add().then(() => true, () => false), 30_000, 'the producer connection to be answered again');
}

test('after its Redis connection went silent, the worker takes jobs and delivery wake-ups again within seconds', async () => {
  const { accountId } = await newAccount(h);
  const jobStatus = async (id: string) => (await h.deps.database.pool.query<{ status: string }>('SELECT status FROM jobs WHERE id = $1', [id])).rows[0]?.status;
  const queues = webhookQueuesFor(h.deps);

  // Before: a job runs, a wake-up is taken.
  const before = await createJob(h.deps.database.db, { accountId, type: echoJob.type, payload: { value: 1 } });
  await h.deps.jobQueue.enqueue(before.id);
  await eventually(async () => (await jobStatus(before.id)) === 'succeeded', 15_000, 'the job before the silence to run');

  proxy.strandOpenConnections();
  const strandedAt = Date.now();

  const after = await createJob(h.deps.database.db, { accountId, type: echoJob.type, payload: { value: 2 } });
  await addOnceAnswered(() => h.deps.jobQueue.enqueue(after.id));
  const wakeId = `silent-${randomToken(6)}`;
  await addOnceAnswered(() => queues.delivery.add('wake-account', { accountId }, { jobId: wakeId }));

  await eventually(async () => (await jobStatus(after.id)) === 'succeeded', 45_000, 'the job after the silence to run');
  await eventually(async () => (await queues.delivery.getJob(wakeId).then((j) => j?.getState())) === 'completed', 45_000, 'the delivery wake-up to be taken');
  // Within seconds, not TCP's minutes: the watch's two unanswered PINGs, BullMQ's blocking wait.
  expect(Date.now() - strandedAt).toBeLessThan(45_000);
});
