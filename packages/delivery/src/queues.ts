import { createHash } from 'node:crypto';
import { Queue } from 'bullmq';
import { queuePrefix, type Deps } from '@teamchat/core';

/**
 * The webhook queues (producer side). The database is the truth: a job only wakes a worker
 * for a row; a lost job is put back by the worker's sweep.
 * - fan-out: one job per batch of events (up to FANOUT_BATCH, in seq order); jobId = the event id
 *   for one event, else a hash of the batch's ids, so the same batch handed over twice is one job
 *   (and an event handed over twice in different batches still fans out once: fan-out.ts).
 * - delivery: a wake-up for one row, jobId = the row id: a retry's delayed job, a row the sweep
 *   found, a row that must wait; the job hands the row to its process's dispatcher.
 */
export const WEBHOOK_FANOUT_QUEUE = 'webhook-fanout';
export const WEBHOOK_DELIVERY_QUEUE = 'webhook-delivery';

export interface FanoutMessage {
  eventIds: string[];
  /** a job enqueued before batches existed (one event), still read */
  eventId?: string;
}

/** Events per fan-out job: the job writes their deliveries in one statement and hands them to its process's dispatcher. */
export const FANOUT_BATCH = 100;

/** The events of a fan-out job, old (one event) or new (a batch). */
export function fanoutEventIds(m: FanoutMessage): string[] {
  return m.eventIds ?? (m.eventId ? [m.eventId] : []);
}

function fanoutJobId(eventIds: readonly string[]): string {
  if (eventIds.length === 1) return eventIds[0];
  return `batch-${createHash('sha1').update(eventIds.join(',')).digest('hex')}`;
}
export interface DeliveryMessage {
  deliveryId: string;
}

/** Jobs are removed when done, so the sweep may add a row's job again whenever its row is still open. */
const JOB_OPTIONS = { removeOnComplete: true, removeOnFail: true, attempts: 5, backoff: { type: 'exponential', delay: 1000 } } as const;

export class WebhookQueues {
  readonly fanout: Queue<FanoutMessage>;
  readonly delivery: Queue<DeliveryMessage>;

  constructor(private readonly deps: Pick<Deps, 'redis' | 'config' | 'now'>) {
    const connection = deps.redis;
    this.fanout = new Queue<FanoutMessage>(WEBHOOK_FANOUT_QUEUE, { connection, prefix: queuePrefix(deps.config, WEBHOOK_FANOUT_QUEUE) });
    this.delivery = new Queue<DeliveryMessage>(WEBHOOK_DELIVERY_QUEUE, { connection, prefix: queuePrefix(deps.config, WEBHOOK_DELIVERY_QUEUE) });
    this.fanout.on('error', () => undefined);
    this.delivery.on('error', () => undefined);
  }

  async enqueueFanout(eventIds: readonly string[]): Promise<void> {
    if (eventIds.length === 0) return;
    const batches: string[][] = [];
    for (let i = 0; i < eventIds.length; i += FANOUT_BATCH) batches.push(eventIds.slice(i, i + FANOUT_BATCH));
    await this.fanout.addBulk(batches.map((ids) => ({ name: 'fanout', data: { eventIds: ids }, opts: { ...JOB_OPTIONS, jobId: fanoutJobId(ids) } })));
  }

  /** Fan-out jobs waiting for a worker (the relay hands nothing more over while many wait). */
  async waitingFanouts(): Promise<number> {
    return this.fanout.getWaitingCount();
  }

  /** Wakes a worker for the row at `at` (now when absent). Idempotent while the row's job exists. */
  async enqueueDelivery(deliveryId: string, at?: Date | null): Promise<void> {
    const delay = at ? Math.max(0, at.getTime() - this.deps.now().getTime()) : 0;
    await this.delivery.add('deliver', { deliveryId }, { ...JOB_OPTIONS, jobId: deliveryId, delay });
  }

  /**
   * Wakes a worker for the row at `at`, under a job id of its own (the row's job may still be
   * finishing): a row that must wait after its job handed it to the dispatcher.
   */
  async enqueueWakeUp(deliveryId: string, at: Date): Promise<void> {
    const delay = Math.max(0, at.getTime() - this.deps.now().getTime());
    await this.delivery.add('deliver', { deliveryId }, { ...JOB_OPTIONS, jobId: `${deliveryId}-at${at.getTime()}`, delay });
  }

  async enqueueDeliveries(rows: ReadonlyArray<{ id: string; at?: Date | null }>): Promise<void> {
    if (rows.length === 0) return;
    const now = this.deps.now().getTime();
    await this.delivery.addBulk(rows.map((r) => ({
      name: 'deliver',
      data: { deliveryId: r.id },
      opts: { ...JOB_OPTIONS, jobId: r.id, delay: r.at ? Math.max(0, r.at.getTime() - now) : 0 },
    })));
  }

  async close(): Promise<void> {
    await Promise.all([this.fanout.close(), this.delivery.close()]);
  }
}

const byDeps = new WeakMap<object, WebhookQueues>();

/**
 * The process's producer queues on its deps' Redis connection (built on first use). With the
 * process's metrics, their depths are reported at scrape time (operators scale workers on them).
 */
export function webhookQueuesFor(deps: Pick<Deps, 'redis' | 'config' | 'now'> & Partial<Pick<Deps, 'metrics'>>): WebhookQueues {
  let q = byDeps.get(deps);
  if (!q) {
    q = new WebhookQueues(deps);
    byDeps.set(deps, q);
    deps.metrics?.trackQueue(q.fanout);
    deps.metrics?.trackQueue(q.delivery);
  }
  return q;
}
