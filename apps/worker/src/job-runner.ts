import { UnrecoverableError, Worker, type Job } from 'bullmq';
import { AppError, JOBS_QUEUE, queuePrefix, type RedisClient, assertAccountActive, claimJob, finishJob, jobDefinition, releaseJob, type Deps, type JobMessage } from '@teamchat/core';

/**
 * Runs background jobs: loads the row by id, claims it (queued → running), runs the handler
 * from the catalogue and records the outcome. A job whose row is not queued is skipped, so a
 * duplicate enqueue never runs a job twice. A job of a read-only or suspended account runs
 * nothing and fails with read_only / suspended. A domain error (AppError) fails the job at once; any
 * other error is transient: the row goes back to queued and BullMQ retries with backoff
 * (JOB_RETRY), and only when the attempts are spent is the job failed.
 */
export function startJobRunner(deps: Deps, connection: RedisClient, concurrency = 4): Worker<JobMessage> {
  const worker = new Worker<JobMessage>(
    JOBS_QUEUE,
    async (job: Job<JobMessage>) => {
      const row = await claimJob(deps.database.db, job.data.jobId);
      if (!row) return { skipped: true };
      const log = deps.logger.child({ job_id: row.id, job_type: row.type });
      const def = jobDefinition(row.type);
      if (!def) {
        await finishJob(deps.database.db, row.id, { status: 'failed', error: { code: 'unknown_job_type', message: `No handler for ${row.type}.` } });
        throw new UnrecoverableError(`unknown job type ${row.type}`);
      }
      const { value, error } = def.payload.validate(row.payload);
      if (error) {
        await finishJob(deps.database.db, row.id, { status: 'failed', error: { code: 'invalid_payload', message: error.message } });
        throw new UnrecoverableError(error.message);
      }
      try {
        // Approved while the account was active; it may be read-only or suspended by now.
        await assertAccountActive(deps.database.db, row.accountId);
        const result = await def.run(deps, value, { id: row.id, accountId: row.accountId });
        await finishJob(deps.database.db, row.id, { status: 'succeeded', result: result ?? null });
        log.info('job succeeded');
        return { ok: true };
      } catch (err) {
        if (err instanceof AppError) {
          await finishJob(deps.database.db, row.id, { status: 'failed', error: { code: err.code, message: err.message, ...err.extras } });
          return { ok: false };
        }
        const attempt = job.attemptsMade + 1;
        const attempts = job.opts.attempts ?? 1;
        const detail = { error: (err as Error).message, stack: (err as Error).stack, attempt, attempts };
        if (attempt < attempts) {
          log.warn('job failed, will retry', detail);
          await releaseJob(deps.database.db, row.id);
          throw err;
        }
        log.error('job failed, attempts spent', detail);
        await finishJob(deps.database.db, row.id, { status: 'failed', error: { code: 'internal', message: 'The job failed on our side.', attempts } });
        return { ok: false };
      }
    },
    { connection, prefix: queuePrefix(deps.config, JOBS_QUEUE), concurrency },
  );
  worker.on('error', (err) => deps.logger.error('job worker error', { error: err.message }));
  return worker;
}
