import { createHash } from 'node:crypto';
import { Queue } from 'bullmq';
import { QueueReadyGate, queuePrefix, type Deps } from '@teamchat/core';

/**
 * The webhook queues (producer side). The database is the truth: a job only wakes a worker
 * for a row; a lost job is put back by the worker's sweep.
 * - fan-out: one job per batch of events (up to FANOUT_BATCH, in seq order); jobId = the event id
 *   for one event, else a hash of the batch's ids, so the same batch handed over twice is one job
 *   (and an event handed over twice in different batches still fans out once: fan-out.ts).
 * - delivery: wake-ups (docs/webhooks.md "Wake-ups"). A retry due at least
 *   ACCOUNT_WAKE_UP_AHEAD_MS ahead, and an account the sweep found rows of, wake the ACCOUNT in
 *   a second (in a 10 s step for a retry 5 min or more ahead): jobId = account + the second (or
 *   step), so all its retries due in one second (step) are one job,
 *   and the job makes its process's dispatcher read the account's due rows from the database
 *   (an hour-long outage's 720,000 retries are 360 jobs per account, not 720,000). A retry due
 *   sooner, and a row that must wait a moment, wake their ROW: jobId = the row id (or the row
 *   and its time), and the job hands that row to the dispatcher.
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
/** A delivery job wakes one row (`deliveryId`) or one account's due rows (`accountId`). */
export type DeliveryMessage = { deliveryId: string; accountId?: undefined } | { accountId: string; deliveryId?: undefined };

/**
 * A retry due at least this far ahead wakes its account, not its row. Its job is then still
 * delayed when another retry of the account in the same second asks for it (a job that has
 * already started would swallow that ask: BullMQ keeps one job per id), and the rows it wakes
 * are all due when it runs. Sooner retries (short schedules) keep a job of their own.
 */
export const ACCOUNT_WAKE_UP_AHEAD_MS = 5000;
/**
 * A retry due at least this far ahead wakes its account for a step of ACCOUNT_WAKE_UP_COARSE_STEP_MS,
 * not of a second: one job per account per 10 s of retries. The schedule's later retries
 * (5 min … 24 h) then go at most 10 s late (3 % of the shortest of them), and an outage's backlog
 * of retries is a tenth of the jobs: fewer to keep in Redis and fewer to take when they all fall
 * due at once (workers back after an outage). A row is never later than the sweep's grace
 * (maintenance.ts OVERDUE_GRACE_MS, also 10 s) would allow anyway.
 */
export const ACCOUNT_WAKE_UP_COARSE_AHEAD_MS = 5 * 60_000;
export const ACCOUNT_WAKE_UP_COARSE_STEP_MS = 10_000;

/**
 * The account wake-up of the step `at` falls in, due at the step's end (rounded up: every row
 * due in that step is due by then). Coarse steps have an id form of their own (the end in
 * seconds, then "s"), apart from the one-second wake-ups'.
 */
function accountWakeUp(accountId: string, at: number, aheadMs: number): { jobId: string; at: number } {
  const coarse = aheadMs >= ACCOUNT_WAKE_UP_COARSE_AHEAD_MS;
  const step = coarse ? ACCOUNT_WAKE_UP_COARSE_STEP_MS : 1000;
  const end = Math.ceil(at / step) * step;
  return { jobId: `account-${accountId}-${end / 1000}${coarse ? 's' : ''}`, at: end };
}

/** Jobs are removed when done, so the sweep may add a row's job again whenever its row is still open. */
const JOB_OPTIONS = { removeOnComplete: true, removeOnFail: true, attempts: 5, backoff: { type: 'exponential', delay: 1000 } } as const;

export class WebhookQueues {
  readonly fanout: Queue<FanoutMessage>;
  readonly delivery: Queue<DeliveryMessage>;
  /** an add fails at once, not waiting, before the queues' first connection on a producer's connection */
  private readonly gate: QueueReadyGate;

  constructor(private readonly deps: Pick<Deps, 'redis' | 'config' | 'now'>) {
    const connection = deps.redis;
    this.fanout = new Queue<FanoutMessage>(WEBHOOK_FANOUT_QUEUE, { connection, prefix: queuePrefix(deps.config, WEBHOOK_FANOUT_QUEUE) });
    this.delivery = new Queue<DeliveryMessage>(WEBHOOK_DELIVERY_QUEUE, { connection, prefix: queuePrefix(deps.config, WEBHOOK_DELIVERY_QUEUE) });
    this.fanout.on('error', () => undefined);
    this.delivery.on('error', () => undefined);
    this.gate = new QueueReadyGate([this.fanout, this.delivery], connection);
  }

  async enqueueFanout(eventIds: readonly string[]): Promise<void> {
    if (eventIds.length === 0) return;
    const batches: string[][] = [];
    for (let i = 0; i < eventIds.length; i += FANOUT_BATCH) batches.push(eventIds.slice(i, i + FANOUT_BATCH));
    await this.gate.open();
    await this.fanout.addBulk(batches.map((ids) => ({ name: 'fanout', data: { eventIds: ids }, opts: { ...JOB_OPTIONS, jobId: fanoutJobId(ids) } })));
  }

  /** Fan-out jobs waiting for a worker (the relay hands nothing more over while many wait). */
  async waitingFanouts(): Promise<number> {
    return this.fanout.getWaitingCount();
  }

  /** Wakes a worker for the row at `at` (now when absent). Idempotent while the row's job exists. */
  async enqueueDelivery(deliveryId: string, at?: Date | null): Promise<void> {
    const delay = at ? Math.max(0, at.getTime() - this.deps.now().getTime()) : 0;
    await this.gate.open();
    await this.delivery.add('deliver', { deliveryId }, { ...JOB_OPTIONS, jobId: deliveryId, delay });
  }

  /**
   * Wakes a worker for the row at `at`, under a job id of its own (the row's job may still be
   * finishing): a row that must wait after its job handed it to the dispatcher.
   */
  async enqueueWakeUp(deliveryId: string, at: Date): Promise<void> {
    const delay = Math.max(0, at.getTime() - this.deps.now().getTime());
    await this.gate.open();
    await this.delivery.add('deliver', { deliveryId }, { ...JOB_OPTIONS, jobId: `${deliveryId}-at${at.getTime()}`, delay });
  }

  /**
   * Wakes a worker for each retry row at its time: its account's wake-up for that second (10 s
   * step when 5 min or more ahead) when it is due at least ACCOUNT_WAKE_UP_AHEAD_MS ahead (one
   * job for all the account's retries of that second or step), else the row's own job.
   * Idempotent while the jobs exist.
   */
  async scheduleRetries(rows: ReadonlyArray<{ id: string; accountId: string; at: Date }>): Promise<void> {
    if (rows.length === 0) return;
    const now = this.deps.now().getTime();
    const jobs = new Map<string, { name: string; data: DeliveryMessage; opts: typeof JOB_OPTIONS & { jobId: string; delay: number } }>();
    for (const r of rows) {
      const at = r.at.getTime();
      if (at - now >= ACCOUNT_WAKE_UP_AHEAD_MS) {
        const wake = accountWakeUp(r.accountId, at, at - now);
        jobs.set(wake.jobId, { name: 'wake-account', data: { accountId: r.accountId }, opts: { ...JOB_OPTIONS, jobId: wake.jobId, delay: wake.at - now } });
      } else {
        jobs.set(r.id, { name: 'deliver', data: { deliveryId: r.id }, opts: { ...JOB_OPTIONS, jobId: r.id, delay: Math.max(0, at - now) } });
      }
    }
    await this.gate.open();
    await this.delivery.addBulk([...jobs.values()]);
  }

  /** Wakes a worker now for each account's due rows (the sweep's: rows whose wake-up was lost). */
  async wakeAccounts(accountIds: readonly string[]): Promise<void> {
    if (accountIds.length === 0) return;
    const now = this.deps.now().getTime();
    await this.gate.open();
    await this.delivery.addBulk(accountIds.map((accountId) => {
      const wake = accountWakeUp(accountId, now, 0);
      return { name: 'wake-account', data: { accountId }, opts: { ...JOB_OPTIONS, jobId: wake.jobId, delay: 0 } };
    }));
  }

  async close(): Promise<void> {
    await Promise.all([this.fanout.close(), this.delivery.close()]);
  }
}

const byConnection = new WeakMap<object, WebhookQueues>();

/**
 * The process's producer queues on its deps' Redis connection, one pair per connection (built on
 * first use; copies of the deps share them). With the process's metrics, their depths are
 * reported at scrape time (operators scale workers on them).
 *
 * BullMQ's first use of a queue waits for its connection to be ready, however the connection
 * is set to fail fast: so the API builds them with its app (createApp), to connect as soon as
 * Redis answers, and until they have connected an add fails at once (QueueReadyGate), as it does
 * afterwards while Redis is away (the producer connection queues nothing).
 */
export function webhookQueuesFor(deps: Pick<Deps, 'redis' | 'config' | 'now'> & Partial<Pick<Deps, 'metrics'>>): WebhookQueues {
  let q = byConnection.get(deps.redis);
  if (!q) {
    q = new WebhookQueues(deps);
    byConnection.set(deps.redis, q);
    deps.metrics?.trackQueue(q.fanout);
    deps.metrics?.trackQueue(q.delivery);
  }
  return q;
}
