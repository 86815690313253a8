import type Redis from 'ioredis';
import type { Database } from '@teamchat/db';
import type { Config } from './config';
import type { CursorCodec } from './cursor';
import type { Logger } from './logger';
import type { JobQueue } from './jobs/queue';

/** Everything a use case may need, built once per process. */
export interface Deps {
  config: Readonly<Config>;
  database: Database;
  redis: Redis;
  logger: Logger;
  cursors: CursorCodec;
  jobQueue: JobQueue;
  /** the clock; injectable so tests can move time (limits, expiry) */
  now: () => Date;
}
