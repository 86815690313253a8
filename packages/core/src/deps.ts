import { createDatabase } from '@teamchat/db';
import type { Config } from './config';
import type { Deps } from './context';
import { CursorCodec } from './cursor';
import { deriveKey } from './crypto';
import { createLogger, throttledWarning } from './logger';
import { createRedisFor, watchRedisConnection } from './redis';
import { JobQueue } from './jobs/queue';
import { createMetrics } from './metrics/metrics';
import { HeavyReadGate } from './limits/heavy-reads';
import { PasswordHashingGate } from './auth/password-hashing-gate';
import { Warmth } from './ops/warm-up';
import { relayWakeUpsOn } from './events/wake';
import { listenDatabaseUrl } from './config';

/** Builds the process-wide dependencies; `close` releases them in reverse order. */
export function createDeps(
  config: Readonly<Config>,
  service: string,
  options: {
    now?: () => Date;
    poolSize?: number;
    statementTimeoutMs?: number;
    /** a serving process (API, MCP server, worker): starts cold (not ready until its warm-up ran) and keeps its idle connections open; default false */
    serving?: boolean;
  } = {},
): Deps & { close(): Promise<void> } {
  const poolSize = options.poolSize ?? 10;
  const database = createDatabase(config.databaseUrl, {
    max: poolSize,
    application_name: service,
    keepIdle: options.serving ?? false,
    statementTimeoutMs: options.statementTimeoutMs ?? config.dbStatementTimeoutMs,
    poolMode: config.databasePoolMode,
    // The delivery engine's lookups by id arrays need plans made with their parameters (DatabaseOptions.customPlans).
    customPlans: service === 'worker',
    // ...and its lookups by key keep one plan each, on a pool of their own (DatabaseOptions.byKeyPool);
    // so does the API's page read, which with a table's statistics was planned on every execution
    // (docs/performance.md "The page read").
    byKeyPool: service === 'worker' || service === 'api',
    // The worker's by-key writes (fan-out, claims, quick closes) wait for no WAL flush: one a
    // PostgreSQL crash loses is done again, at least once (docs/webhooks.md "Crash safety").
    byKeyAsyncCommit: service === 'worker',
  });
  const redis = createRedisFor(config, 'producer');
  const now = options.now ?? (() => new Date());
  const jobQueue = new JobQueue(redis, config);
  const metrics = createMetrics();
  metrics.watchOutbox(database.pool);
  metrics.trackQueue(jobQueue.queue);
  const logger = createLogger(service, config.logLevel);
  const stopWatchingRedis = watchRedisConnection(redis, logger);
  const deps: Deps = {
    config,
    database,
    redis,
    logger,
    cursors: new CursorCodec(deriveKey(config.secretsKey, 'cursor'), () => now().getTime()),
    jobQueue,
    metrics,
    now,
    passwordHashing: new PasswordHashingGate(),
    warmth: new Warmth(!options.serving),
    heavyReads: new HeavyReadGate({ poolSize, maxWaitMs: options.statementTimeoutMs ?? config.dbStatementTimeoutMs }),
    // A lost wake-up costs the relay's poll (100 ms), not an event: said at most every 10 s.
    relayWakeUps: relayWakeUpsOn(database.pool, listenDatabaseUrl(config) !== null,
      throttledWarning(logger, 'waking the webhook relay failed; it finds the events at its next poll')),
  };
  return {
    ...deps,
    async close() {
      // A warm-up step still under way uses the pools and Redis: it ends first (a shutdown
      // signal lets no further step start: Warmth).
      await deps.warmth.idle();
      await deps.jobQueue.close().catch(() => undefined);
      stopWatchingRedis();
      redis.disconnect();
      await database.close();
    },
  };
}
