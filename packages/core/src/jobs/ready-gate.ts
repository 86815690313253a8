import type { QueueBase } from 'bullmq';
import type { RedisClient } from '../redis';

/**
 * Whether a producer's BullMQ queues may be added to now. BullMQ holds every command of a queue
 * until the queue's first connection to Redis is made, however the connection is set to fail
 * fast: an add to a queue made while Redis was away would wait until Redis is back, and the
 * request that made it with it. So an add first passes the gate: until each queue has connected
 * once, it fails at once ("Redis unavailable") while the connection is not ready, as every
 * command of the producer connection does while Redis is away (docs/limits.md "When Redis is
 * away"); the database row stays, and the worker's sweep picks it up. With the connection ready
 * it waits for the queues' first connection, which is then a round trip away. From the first
 * connection on, BullMQ no longer waits.
 *
 * Only on a connection that fails fast (a producer's: no offline queue). A worker's connection
 * waits for Redis by design, and so do its queues' adds: the gate is open there.
 */
export class QueueReadyGate {
  private connected: Promise<unknown> | null;

  constructor(queues: readonly QueueBase[], private readonly connection: RedisClient) {
    const failsFast = connection.options.enableOfflineQueue === false;
    if (!failsFast) {
      this.connected = null;
      return;
    }
    this.connected = Promise.all(queues.map((q) => q.waitUntilReady()));
    // A queue closed before it ever connected rejects here; nothing waits on it then.
    this.connected.then(() => { this.connected = null; }, () => undefined);
  }

  /** Resolves once the queues may be added to; rejects at once while they never connected and Redis is away. */
  async open(): Promise<void> {
    if (this.connected === null) return;
    if (this.connection.status !== 'ready') throw new Error('Redis unavailable: the queue has not connected to Redis yet');
    await this.connected;
  }
}
