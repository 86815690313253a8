import { DELIVERY_LOG_RETENTION_MS, RedisScript, detachExpiredLogWeeks, type Deps, type WarmUpStep } from '@teamchat/core';
import { prepareStatementsOnEveryPool } from '@teamchat/db';
import { fanOutEvents, unrelayedEvents } from './fan-out';
import { runPipeline } from './pipeline';
import { WebhookTransport } from './transport';
import { warmUpAttempts } from './warm-up-attempts';
import { warmUpDeliveries } from './warm-up-deliveries';

/** An id no row has: the dry passes below find nothing and write nothing. */
const NO_ROW = 'warm-up-no-such-row';

/**
 * The worker's warm-up (docs/operations.md "Readiness"), run before the engine starts and before
 * /readyz answers 200: every pool connection opened with every named statement prepared on it,
 * the Redis scripts loaded, and one dry pass of the relay's scan, the fan-out and the attempt
 * pipeline over a row that does not exist (their code loaded and run, nothing written), and
 * WARM_UP_ATTEMPTS attempts on rows held in memory to a receiver of the worker's own
 * (warm-up-attempts.ts: the per-delivery code compiled before the first delivery), and
 * WARM_UP_DELIVERIES deliveries through the real path on real rows in one transaction rolled back
 * (warm-up-deliveries.ts: the per-batch code's first runs, before the first delivery); then
 * the log's weeks past the 30 days detached and dropped (detachExpiredLogWeeks: each detach
 * waits at most PURGE_LOCK_WAIT_MS for its lock, and nothing else is purged here), so a fresh
 * install's first detaches, which hold up the log's statements while they wait, come before any
 * traffic. The rest of the purge is the maintenance's, hourly.
 */
export function engineWarmUp(deps: Deps): WarmUpStep[] {
  return [
    // The by-key pool's connections too, with their one generic plan each made here.
    { name: 'postgres', run: () => prepareStatementsOnEveryPool(deps.database) },
    { name: 'redis_scripts', run: () => RedisScript.loadAll(deps.redis) },
    {
      name: 'dry_pass',
      run: async () => {
        await unrelayedEvents(deps.database.db, 1, { accountIds: [NO_ROW] });
        await fanOutEvents(deps, [NO_ROW]);
        const transport = new WebhookTransport(deps.config);
        try {
          await Promise.all(await runPipeline(deps, transport, [NO_ROW]));
        } finally {
          await transport.close();
        }
      },
    },
    { name: 'attempts', run: () => warmUpAttempts(deps) },
    { name: 'deliveries', run: () => warmUpDeliveries(deps) },
    { name: 'log_weeks', run: async () => { await detachExpiredLogWeeks(deps.database.db, new Date(deps.now().getTime() - DELIVERY_LOG_RETENTION_MS)); } },
  ];
}
