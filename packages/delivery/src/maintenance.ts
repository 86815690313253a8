import {
  DELIVERY_LOG_RETENTION_MS, analyzeChangedLogPartitions, announceAutoDisabled, disableIfFailing, stillFailing, ensureDeliveryLogPartitions, failingAfter,
  failingCandidates, foldEndpointHealth, purgeDeliveryLog, purgeMirrorLog, type Deps, type FailingCandidate,
} from '@teamchat/core';
import { readLaneAges } from './lane-ages';
import { announceMirrorDisabled, autoDisableMirror } from './mirror-send';
import type { WebhookQueues } from './queues';
import { retryOnConflict } from './store';
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

/**
 * How often the `failing` check runs (the first one this long after the engine's start): the rule
 * is 24 h long, so a minute late is 0.07 % of it, and the check's query reads the endpoints table
 * (failingCandidates) once a minute rather than at every pass.
 */
export const FAILING_CHECK_EVERY_MS = 60_000;
/**
 * At most this many endpoints disabled per check (each is a transaction and an email to the
 * account's owners and admins, and the pass also carries the sweep); with more due, the next pass
 * checks again. FAILING_CHECK_READ endpoints are read per check, oldest streak first.
 */
export const FAILING_CHECK_DISABLES = 100;
export const FAILING_CHECK_READ = 1000;

/** When the maintenance's periodic parts are next due (ms); a missing `nextFailingCheckAt` is due now. */
export interface MaintenanceSchedule {
  nextPurgeAt: number;
  nextFailingCheckAt?: number;
}

/**
 * The maintenance's schedule for an engine started at `startedAt` (ms): its first full purge
 * PURGE_FIRST_AFTER_MS later, its first `failing` check FAILING_CHECK_EVERY_MS later.
 */
export function maintenanceScheduleFrom(startedAt: number): Required<MaintenanceSchedule> {
  return { nextPurgeAt: startedAt + PURGE_FIRST_AFTER_MS, nextFailingCheckAt: startedAt + FAILING_CHECK_EVERY_MS };
}

/**
 * The webhook half of a maintenance pass. The database is the truth: an account with open rows
 * overdue (their wake-up lost, a clock moved, a units reset; not rows waiting in a live process's
 * lane for a slot, lane-ages.ts) is woken, and whichever dispatcher
 * takes the wake-up reads its due rows (sweep.ts). Every pass folds the endpoints' health
 * deltas into their rollups (docs/webhooks.md "Health and stats rollups") and renews the
 * statistics of a log partition that changed much (analyzeChangedLogPartitions). Every minute,
 * the endpoints and mirrors whose failures have lasted 24 h are disabled (`failing`,
 * disableFailingEndpoints, disableFailingMirrors).
 * Hourly, the log's weekly partitions are made ahead and the 30-day purge of the webhook delivery
 * log (dropping whole weeks) and of the mirrors' delivery log (the same retention) runs.
 */
export async function webhookMaintenance(
  deps: Deps, queues: WebhookQueues, state: MaintenanceSchedule, accountIds?: readonly string[],
): Promise<{ woken: number; purged: number; disabled: number }> {
  // Rows waiting in a live process's lane are not lost (lane-ages.ts). Without Redis nothing is
  // known of the lanes, and every overdue row counts, as it would with no lanes at all.
  const waitingSince = await readLaneAges(deps).catch(() => undefined);
  const overdue = await overdueAccounts(deps.database.db, deps.now(), OVERDUE_GRACE_MS, { accountIds, waitingSince });
  await queues.wakeAccounts(overdue);
  await foldEndpointHealth(deps.database.db);
  await analyzeChangedLogPartitions(deps.database.db);
  const disabled = Date.now() >= (state.nextFailingCheckAt ?? 0) ? await failingCheck(deps, state, accountIds) : 0;
  const purged = Date.now() >= state.nextPurgeAt ? await retentionPass(deps, state) : 0;
  return { woken: overdue.length, purged, disabled };
}

/**
 * The `failing` check of a pass, of endpoints and of mirrors, due every FAILING_CHECK_EVERY_MS,
 * or at the next pass while more are due.
 */
async function failingCheck(deps: Deps, state: MaintenanceSchedule, accountIds?: readonly string[]): Promise<number> {
  state.nextFailingCheckAt = Date.now() + FAILING_CHECK_EVERY_MS;
  const endpoints = await disableFailingEndpoints(deps, accountIds);
  const mirrored = await disableFailingMirrors(deps, accountIds);
  if (endpoints.more || mirrored.more) state.nextFailingCheckAt = Date.now();
  return endpoints.disabled + mirrored.disabled;
}

/**
 * Disables the endpoints the `failing` rule judges so now (spec: Webhook endpoint enablement,
 * "every delivery failed for 24 hours"), whether or not an attempt fails at that moment: an
 * endpoint whose retries are spaced out (2 h, 6 h, 12 h, 24 h) would otherwise stay enabled until
 * its next failure, up to a day late, and that attempt would be sent. The same rule
 * (failingAfter), disabling (autoDisable: its open deliveries dropped) and notice as an
 * attempt's record. `more`: endpoints left for the next pass.
 */
export function disableFailingEndpoints(deps: Deps, accountIds?: readonly string[]): Promise<{ disabled: number; more: boolean }> {
  return disableFailing(deps, 'endpoints', accountIds);
}

/**
 * The same for mirrors (docs/mirrors.md "Sending"): a mirror whose sends have all failed for
 * 24 h is disabled `failing` now, not at its next failed send, with what waits dropped and the
 * notice a failed send's record gives.
 */
export function disableFailingMirrors(deps: Deps, accountIds?: readonly string[]): Promise<{ disabled: number; more: boolean }> {
  return disableFailing(deps, 'mirrors', accountIds);
}

/** The check over one kind of target: at most FAILING_CHECK_READ read, FAILING_CHECK_DISABLES disabled. */
async function disableFailing(deps: Deps, of: 'endpoints' | 'mirrors', accountIds?: readonly string[]): Promise<{ disabled: number; more: boolean }> {
  const now = deps.now();
  const read = await failingCandidates(deps.database.db, now, { limit: FAILING_CHECK_READ, accountIds, of });
  const due = read.filter((target) => failingAfter(target, now));
  const disableOne = of === 'mirrors' ? disableMirrorForFailing : disableEndpointForFailing;
  let disabled = 0;
  for (const target of due.slice(0, FAILING_CHECK_DISABLES)) {
    if (await disableOne(deps, target, now)) disabled += 1;
  }
  // A full read may have left due targets unread: look again at the next pass while that makes progress.
  return { disabled, more: due.length > FAILING_CHECK_DISABLES || (read.length === FAILING_CHECK_READ && disabled > 0) };
}

/**
 * One endpoint's disabling, judged again under its row's lock (disableIfFailing), then
 * announced. Its transaction locks the endpoint and then its open rows, as an attempt's record
 * that disables it does; an attempt recording meanwhile locks them in the other order, and a
 * deadlock between the two is run again (retryOnConflict).
 */
async function disableEndpointForFailing(deps: Deps, endpoint: FailingCandidate, now: Date): Promise<boolean> {
  const disabled = await retryOnConflict(() => deps.database.db.transaction((tx) => disableIfFailing(tx, endpoint.id, now)));
  if (disabled) await announceAutoDisabled(deps, { accountId: endpoint.accountId, endpointId: endpoint.id, url: endpoint.url, reason: 'failing' });
  return disabled;
}

/** One mirror's disabling, the same way: judged again under its row's lock, disabled as a failed send disables it (autoDisableMirror), announced. */
async function disableMirrorForFailing(deps: Deps, mirror: FailingCandidate, now: Date): Promise<boolean> {
  const disabled = await retryOnConflict(() => deps.database.db.transaction(async (tx) =>
    (await stillFailing(tx, 'mirrors', mirror.id, now)) && (await autoDisableMirror(tx, mirror.id, 'failing', now))));
  if (disabled) await announceMirrorDisabled(deps, mirror, 'failing');
  return disabled;
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
