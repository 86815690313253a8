import { createDatabase } from '@teamchat/db';
import type { Config } from './config';
import type { Deps } from './context';
import { CursorCodec } from './cursor';
import { deriveKey } from './crypto';
import { createLogger } from './logger';
import { createRedis } from './redis';
import { JobQueue } from './jobs/queue';
import { createMetrics } from './metrics/metrics';

/** Builds the process-wide dependencies; `close` releases them in reverse order. */
export function createDeps(
  config: Readonly<Config>,
  service: string,
  options: { now?: () => Date; poolSize?: number } = {},
): Deps & { close(): Promise<void> } {
  const database = createDatabase(config.databaseUrl, { max: options.poolSize ?? 10, application_name: service });
  const redis = createRedis(config.redisUrl, 'producer');
  const now = options.now ?? (() => new Date());
  const jobQueue = new JobQueue(redis, config.redisPrefix);
  const metrics = createMetrics();
  metrics.watchOutbox(database.pool);
  metrics.trackQueue(jobQueue.queue);
  const deps: Deps = {
    config,
    database,
    redis,
    logger: createLogger(service, config.logLevel),
    cursors: new CursorCodec(deriveKey(config.secretsKey, 'cursor'), () => now().getTime()),
    jobQueue,
    metrics,
    now,
  };
  return {
    ...deps,
    async close() {
      await deps.jobQueue.close().catch(() => undefined);
      redis.disconnect();
      await database.close();
    },
  };
}
