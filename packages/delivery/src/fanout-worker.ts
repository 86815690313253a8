import { Worker, type Job } from 'bullmq';
import { claimMs, queuePrefix, type Deps, type RedisClient } from '@teamchat/core';
import type { Dispatcher } from './dispatcher';
import { planFanOut, writeFanOut, type FannedOutDelivery } from './fan-out';
import { releaseClaims } from './store';
import type { FanOutRead } from './statements';
import { WEBHOOK_FANOUT_QUEUE, fanoutEventIds, type FanoutMessage } from './queues';

/**
 * A fan-out job's BullMQ lock: short, so the job of a worker that died mid-fan-out is found stalled
 * and taken by another worker within ~15 s (lock 10 s + one 3 s stall check), not BullMQ's default
 * of up to a minute. A fan-out is one short write, far below the lock, and the lock is renewed at
 * half its length while a job runs.
 */
export const FANOUT_LOCK_MS = 10_000;
export const FANOUT_STALLED_CHECK_MS = 3_000;

/**
 * Fans a batch of events out (one write) and hands their rows to this process's dispatcher,
 * observing the relay and fan_out stages: a fan-out job's work, and the relay's own when it fans
 * a small batch out itself (relay.ts). Rejects only before or in the write: the events are then
 * still unrelayed, and the relay hands them over again.
 */
export async function fanOutAndHandOver(deps: Deps, dispatcher: Dispatcher, eventIds: readonly string[], read?: readonly FanOutRead[]): Promise<{ deliveries: number; queued: number }> {
  const startedAt = Date.now();
  const plan = await planFanOut(deps, eventIds, read);
  // The rows that will get a slot at once are claimed in the write itself (dispatcher.claimable),
  // reserved until they are submitted.
  const picked = dispatcher.claimable(plan.rows);
  let rows: FannedOutDelivery[];
  let queued: number;
  const until = new Date(deps.now().getTime() + claimMs(deps.config));
  try {
    const written = await writeFanOut(deps, plan, picked.ids.size > 0 ? { ids: picked.ids, until } : undefined);
    rows = written.rows;
    queued = dispatcher.submit(rows, written.claimed);
  } catch (err) {
    // Claims a written batch would hold with nobody to send them go back (a no-op if nothing was written).
    if (picked.ids.size > 0) await releaseClaims(deps.database.db, [...picked.ids], until).catch(() => undefined);
    throw err;
  } finally {
    picked.release();
  }
  const took = (Date.now() - startedAt) / 1000;
  const events = new Map(rows.map((r) => [r.eventId, r.eventCreatedAt]));
  for (const createdAt of events.values()) {
    deps.metrics.deliveryStageSeconds.observe({ stage: 'relay' }, Math.max(0, startedAt - createdAt.getTime()) / 1000);
    deps.metrics.deliveryStageSeconds.observe({ stage: 'fan_out' }, took);
  }
  return { deliveries: rows.length, queued };
}

/**
 * Fan-out jobs: a batch of events gets its delivery rows (core fan-out, one write for the batch),
 * which go to the process's dispatcher; the job ends there. It never waits for an attempt, so a
 * slow receiver holds no fan-out job and no place in the fan-out queue. Once the rows are
 * committed, a row the dispatcher had no room for, or lost with a dead process, is the sweep's.
 */
export function startFanoutWorker(deps: Deps, connection: RedisClient, dispatcher: Dispatcher, concurrency = 8): Worker<FanoutMessage> {
  const worker = new Worker<FanoutMessage>(
    WEBHOOK_FANOUT_QUEUE,
    async (job: Job<FanoutMessage>) => {
      const eventIds = fanoutEventIds(job.data);
      // Fails only before or in its write (the job is retried: its events are still unrelayed).
      return { events: eventIds.length, ...(await fanOutAndHandOver(deps, dispatcher, eventIds)) };
    },
    {
      connection,
      prefix: queuePrefix(deps.config, WEBHOOK_FANOUT_QUEUE),
      concurrency,
      lockDuration: FANOUT_LOCK_MS,
      stalledInterval: FANOUT_STALLED_CHECK_MS,
      maxStalledCount: 1000,
    },
  );
  worker.on('error', (err) => deps.logger.error('fan-out worker error', { error: err.message }));
  return worker;
}
