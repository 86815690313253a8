import type { RedisClient } from './redis';
import type { Database } from '@teamchat/db';
import type { Config } from './config';
import type { CursorCodec } from './cursor';
import type { Logger } from './logger';
import type { JobQueue } from './jobs/queue';
import type { Metrics } from './metrics/metrics';
import type { HeavyReadGate } from './limits/heavy-reads';
import type { PasswordHashingGate } from './auth/password-hashing-gate';
import type { Warmth } from './ops/warm-up';
import type { RelayWakeUps } from './events/wake';

/** Everything a use case may need, built once per process. */
export interface Deps {
  config: Readonly<Config>;
  database: Database;
  /** one Redis, or a Redis Cluster (REDIS_CLUSTER_NODES): key names from redis-keys.ts */
  redis: RedisClient;
  logger: Logger;
  cursors: CursorCodec;
  jobQueue: JobQueue;
  /** the process's Prometheus metrics (packages/core/src/metrics), served on the operations port */
  metrics: Metrics;
  /** the clock; injectable so tests can move time (limits, expiry) */
  now: () => Date;
  /** the process's gate for expensive reads (search): a fixed share of the pool, one at a time per account */
  heavyReads: HeavyReadGate;
  /** the process's bound on concurrent password hashing (sign-in) */
  passwordHashing: PasswordHashingGate;
  /** whether the process is warm: /readyz answers 200 only then (ops/warm-up.ts) */
  warmth: Warmth;
  /** wakes the webhook relay after every commit of outbox rows (events/wake.ts) */
  relayWakeUps: RelayWakeUps;
}
