import { DELIVERY_LOG_RETENTION_MS, analyzeChangedLogPartitions, ensureDeliveryLogPartitions, foldEndpointHealth, purgeDeliveryLog, purgeMirrorLog, type Deps } from '@teamchat/core';
import { readLaneAges } from './lane-ages';
import type { WebhookQueues } from './queues';
import { overdueAccounts } from './sweep';

/** Open rows due for longer than this without a worker on them get their account woken. */
export const OVERDUE_GRACE_MS = 10_000;
/** How often the delivery log purge runs (it deletes in batches, so a pass stays short). */
export const PURGE_EVERY_MS = 60 * 60_000;
/**
 * The first purge of a started engine runs this long after its start, not in its first seconds:
 * those carry a restarted worker's backlog and the first posts, and the purge's deletes compete
 * with them for the cores and the WAL (the expired weeks themselves are detached in the worker's
 * warm-up, warm-up.ts).
 */
export const PURGE_FIRST_AFTER_MS = 60_000;

/** The maintenance's schedule for an engine started at `startedAt` (ms): its first full purge PURGE_FIRST_AFTER_MS later. */
export function maintenanceScheduleFrom(startedAt: number): { nextPurgeAt: number } {
  return { nextPurgeAt: startedAt + PURGE_FIRST_AFTER_MS };
}

/**
 * The webhook half of a maintenance pass. The database is the truth: an account with open rows
 * overdue (their wake-up lost, a clock moved, a units reset; not rows waiting in a live process's
 * lane for a slot, lane-ages.ts) is woken, and whichever dispatcher
 * takes the wake-up reads its due rows (sweep.ts). Every pass folds the endpoints' health
 * deltas into their rollups (docs/webhooks.md "Health and stats rollups") and renews the
 * statistics of a log partition that changed much (analyzeChangedLogPartitions). Hourly, the log's
 * weekly partitions are made ahead and the 30-day purge of the webhook delivery log (dropping
 * whole weeks) and of the mirrors' delivery log (the same retention) runs.
 */
export async function webhookMaintenance(deps: Deps, queues: WebhookQueues, state: { nextPurgeAt: number }, accountIds?: readonly string[]): Promise<{ woken: number; purged: number }> {
  // Rows waiting in a live process's lane are not lost (lane-ages.ts). Without Redis nothing is
  // known of the lanes, and every overdue row counts, as it would with no lanes at all.
  const waitingSince = await readLaneAges(deps).catch(() => undefined);
  const overdue = await overdueAccounts(deps.database.db, deps.now(), OVERDUE_GRACE_MS, { accountIds, waitingSince });
  await queues.wakeAccounts(overdue);
  await foldEndpointHealth(deps.database.db);
  await analyzeChangedLogPartitions(deps.database.db);
  const purged = Date.now() >= state.nextPurgeAt ? await retentionPass(deps, state) : 0;
  return { woken: overdue.length, purged };
}

/**
 * The hourly part of a maintenance pass: the log's weekly partitions made ahead, the 30-day purge
 * of the webhook delivery log (dropping whole weeks) and of the mirrors' delivery log. A week the
 * log was too busy to detach (PURGE_LOCK_WAIT_MS) is tried again at the next pass.
 */
async function retentionPass(deps: Deps, state: { nextPurgeAt: number }): Promise<number> {
  state.nextPurgeAt = Date.now() + PURGE_EVERY_MS;
  await ensureDeliveryLogPartitions(deps.database.db, deps.now());
  const before = new Date(deps.now().getTime() - DELIVERY_LOG_RETENTION_MS);
  const log = await purgeDeliveryLog(deps.database.db, before);
  if (log.busy > 0) state.nextPurgeAt = Date.now();
  return log.purged + (await purgeMirrorLog(deps.database.db, before));
}
