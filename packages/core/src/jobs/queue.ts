import { Queue } from 'bullmq';
import type { RedisClient } from '../redis';
import { queuePrefix, type RedisKeyConfig } from '../redis-keys';
import { JOB_RETRY } from './catalogue';
import { QueueReadyGate } from './ready-gate';

export const JOBS_QUEUE = 'jobs';

/** Payload on the BullMQ side: the job row's id only; the worker reloads the row. */
export interface JobMessage {
  jobId: string;
}

/** The producer side of the background-jobs queue. Enqueue after commit; the worker sweeps what was missed. */
export class JobQueue {
  readonly queue: Queue<JobMessage>;
  private readonly gate: QueueReadyGate;

  constructor(connection: RedisClient, keys: RedisKeyConfig) {
    this.queue = new Queue<JobMessage>(JOBS_QUEUE, { connection, prefix: queuePrefix(keys, JOBS_QUEUE) });
    this.queue.on('error', () => undefined);
    this.gate = new QueueReadyGate([this.queue], connection);
  }

  /**
   * Idempotent: BullMQ ignores a second add with the same jobId. Transient failures retry per
   * JOB_RETRY. Fails at once while Redis is away, even before the queue's first connection (QueueReadyGate).
   */
  async enqueue(jobId: string): Promise<void> {
    await this.gate.open();
    await this.queue.add('run', { jobId }, { jobId, ...JOB_RETRY, removeOnComplete: 1000, removeOnFail: 5000 });
  }

  close(): Promise<void> {
    return this.queue.close();
  }
}
