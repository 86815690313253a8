import { DelayedError, Worker, type Job } from 'bullmq';
import type Redis from 'ioredis';
import {
  WEBHOOK_DELIVERY_QUEUE, claimMs, runDeliveryAttempt, type DeliveryMessage, type Deps, type WebhookQueues, type WebhookTransport,
} from '@teamchat/core';

/**
 * Delivery jobs: one attempt of one row (core attempt). A row that must wait (not due, claimed
 * by another worker, no in-flight slot, units spent, account inactive) moves its job back to
 * delayed; a failed attempt's retry row gets its own delayed job (job id = the row id).
 *
 * Crash safety: a worker killed mid-attempt leaves the job active with an expiring lock and the
 * row with an expiring claim; BullMQ's stalled-job check hands the job to another worker once
 * the lock (= the claim time) runs out, which re-attempts the row (at-least-once). The claim
 * keeps any two workers from attempting the same row at once.
 */
export function startDeliveryWorker(
  deps: Deps,
  connection: Redis,
  queues: WebhookQueues,
  transport: WebhookTransport,
  concurrency = 64,
): Worker<DeliveryMessage> {
  const lockMs = claimMs(deps.config);
  const worker = new Worker<DeliveryMessage>(
    WEBHOOK_DELIVERY_QUEUE,
    async (job: Job<DeliveryMessage>, token?: string) => {
      const outcome = await runDeliveryAttempt(deps, transport, job.data.deliveryId);
      if (outcome.kind === 'wait') {
        const at = Math.max(Date.now(), Date.now() + (outcome.until.getTime() - deps.now().getTime()));
        await job.moveToDelayed(at, token);
        throw new DelayedError();
      }
      if (outcome.kind === 'done' && outcome.next) {
        await queues.enqueueDelivery(outcome.next.id, outcome.next.at).catch((err: Error) =>
          deps.logger.warn('scheduling a retry failed; the sweep will', { delivery_id: outcome.next!.id, error: err.message }));
      }
      return outcome.kind === 'done' ? { status: outcome.status } : { skipped: outcome.reason };
    },
    {
      connection,
      prefix: deps.config.redisPrefix,
      concurrency,
      lockDuration: lockMs,
      stalledInterval: Math.max(1000, Math.floor(lockMs / 2)),
      maxStalledCount: 1000,
    },
  );
  worker.on('error', (err) => deps.logger.error('delivery worker error', { error: err.message }));
  return worker;
}
