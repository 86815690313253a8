import { DelayedError, Worker, type Job } from 'bullmq';
import { queuePrefix, type Deps, type RedisClient } from '@teamchat/core';
import type { Dispatcher } from './dispatcher';
import { WEBHOOK_DELIVERY_QUEUE, type DeliveryMessage } from './queues';

/**
 * Delivery jobs are wake-ups (queues.ts): of an account (its retries due in one second, or rows
 * the sweep found: the dispatcher reads the account's due rows) or of one row (a retry due soon,
 * a row that must wait). The job hands its rows to the process's dispatcher and ends; it never waits for the attempt, so no job
 * (and no place in the queue) is held by a slow receiver. A row not due yet, or under another
 * worker's claim, moves its job back to delayed until then. A row the dispatcher has no room for
 * (its account has many waiting) stays open in the database; the sweep hands it on later.
 */
export function startDeliveryWorker(deps: Deps, connection: RedisClient, dispatcher: Dispatcher, concurrency = 64): Worker<DeliveryMessage> {
  const worker = new Worker<DeliveryMessage>(
    WEBHOOK_DELIVERY_QUEUE,
    async (job: Job<DeliveryMessage>, token?: string) => {
      if (job.data.accountId !== undefined) {
        dispatcher.wakeAccount(job.data.accountId);
        return { woken: job.data.accountId };
      }
      const submitted = await dispatcher.submitId(job.data.deliveryId);
      if (submitted.kind === 'wait') {
        const at = Math.max(Date.now(), Date.now() + (submitted.until.getTime() - deps.now().getTime()));
        await job.moveToDelayed(at, token);
        throw new DelayedError();
      }
      return { submitted: submitted.kind };
    },
    { connection, prefix: queuePrefix(deps.config, WEBHOOK_DELIVERY_QUEUE), concurrency },
  );
  worker.on('error', (err) => deps.logger.error('delivery worker error', { error: err.message }));
  return worker;
}
