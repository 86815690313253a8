import { fileStoreFor, findStrandedJobs, purgeExpiredKeys, purgePendingFiles, requeueAbandonedJobs, type Deps } from '@teamchat/core';

/** Jobs queued longer than this were probably never enqueued (Redis down at commit): enqueue again. */
export const STRANDED_AFTER_MS = 15_000;
/** Jobs running longer than this lost their worker: put them back. */
export const ABANDONED_AFTER_MS = 10 * 60_000;

/**
 * One maintenance pass: re-enqueue stranded jobs, requeue abandoned ones, purge old idempotency
 * keys, remove uploads never completed within 24 h (bytes included).
 */
export async function maintenancePass(deps: Deps): Promise<{ enqueued: number; requeued: number; purged: number; pendingFiles: number }> {
  const requeued = await requeueAbandonedJobs(deps.database.db, ABANDONED_AFTER_MS);
  const stranded = await findStrandedJobs(deps.database.db, STRANDED_AFTER_MS);
  for (const id of stranded) await deps.jobQueue.enqueue(id);
  const purged = await purgeExpiredKeys(deps.database.db);
  const pendingFiles = await purgePendingFiles(deps.database.db, fileStoreFor(deps.config), deps.now());
  return { enqueued: stranded.length, requeued, purged, pendingFiles };
}

/** Runs maintenancePass every `intervalMs` (default 10 s) until stopped. */
export function startMaintenance(deps: Deps, intervalMs = 10_000): { stop(): void } {
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    maintenancePass(deps)
      .then((r) => {
        if (r.enqueued || r.requeued || r.pendingFiles) deps.logger.info('maintenance', r);
      })
      .catch((err: Error) => deps.logger.error('maintenance failed', { error: err.message }))
      .finally(() => {
        running = false;
      });
  }, intervalMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
