import { Worker, type Job } from 'bullmq';
import type Redis from 'ioredis';
import { WEBHOOK_FANOUT_QUEUE, fanOutEvent, type Deps, type FanoutMessage, type WebhookQueues } from '@teamchat/core';

/** Fan-out jobs: one delivery row per matching endpoint (core fan-out), then a delivery job for each. */
export function startFanoutWorker(deps: Deps, connection: Redis, queues: WebhookQueues, concurrency = 8): Worker<FanoutMessage> {
  const worker = new Worker<FanoutMessage>(
    WEBHOOK_FANOUT_QUEUE,
    async (job: Job<FanoutMessage>) => {
      const ids = await fanOutEvent(deps, job.data.eventId);
      // The rows are committed; a lost wake-up is repaired by the sweep.
      await queues.enqueueDeliveries(ids.map((id) => ({ id }))).catch((err: Error) =>
        deps.logger.warn('enqueueing deliveries failed; the sweep will', { event_id: job.data.eventId, error: err.message }));
      return { deliveries: ids.length };
    },
    { connection, prefix: deps.config.redisPrefix, concurrency },
  );
  worker.on('error', (err) => deps.logger.error('fan-out worker error', { error: err.message }));
  return worker;
}
