import { Worker, type Job } from 'bullmq';
import type Redis from 'ioredis';
import {
  WEBHOOK_FANOUT_QUEUE, fanOutAndDeliver, fanoutEventIds, type Deps, type FanoutMessage, type WebhookQueues, type WebhookTransport,
} from '@teamchat/core';

/**
 * A fan-out job's BullMQ lock: short, so the job of a worker that died mid-fan-out is found stalled
 * and taken by another worker within ~15 s (lock 10 s + one 3 s stall check), not BullMQ's default
 * of up to a minute. A fan-out is one short transaction, far below the lock, and the lock is
 * renewed at half its length while a job runs.
 */
export const FANOUT_LOCK_MS = 10_000;
export const FANOUT_STALLED_CHECK_MS = 3_000;

/**
 * Fan-out jobs: a batch of events gets its delivery rows (core fan-out, one write for the batch),
 * then the job makes their first attempts itself, a round of many at a time (core batch.ts);
 * whatever the batch does not finish (waits, retries, anything out of the common case) gets a
 * delivery job of its own. Once the rows are committed, a lost wake-up is repaired by the sweep.
 */
export function startFanoutWorker(deps: Deps, connection: Redis, queues: WebhookQueues, transport: WebhookTransport, concurrency = 8): Worker<FanoutMessage> {
  const worker = new Worker<FanoutMessage>(
    WEBHOOK_FANOUT_QUEUE,
    async (job: Job<FanoutMessage>) => {
      const eventIds = fanoutEventIds(job.data);
      // Fails only before its write (the job is retried: its events are still unrelayed); after
      // the write, whatever the batch did not finish comes back as jobs.
      const batch = await fanOutAndDeliver(deps, transport, eventIds);
      await queues.enqueueDeliveries(batch.jobs).catch((err: Error) =>
        deps.logger.warn('enqueueing deliveries failed; the sweep will', { job_id: job.id, error: err.message }));
      return { events: eventIds.length, deliveries: batch.rows, delivered: batch.delivered };
    },
    {
      connection,
      prefix: deps.config.redisPrefix,
      concurrency,
      lockDuration: FANOUT_LOCK_MS,
      stalledInterval: FANOUT_STALLED_CHECK_MS,
      maxStalledCount: 1000,
    },
  );
  worker.on('error', (err) => deps.logger.error('fan-out worker error', { error: err.message }));
  return worker;
}
