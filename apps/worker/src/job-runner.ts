import { UnrecoverableError, Worker, type Job } from 'bullmq';
import type Redis from 'ioredis';
import { AppError, JOBS_QUEUE, claimJob, finishJob, jobDefinition, type Deps, type JobMessage } from '@teamchat/core';

/**
 * Runs background jobs: loads the row by id, claims it (queued → running), runs the handler
 * from the catalogue and records the outcome. A job whose row is not queued is skipped, so a
 * duplicate enqueue never runs a job twice.
 */
export function startJobRunner(deps: Deps, connection: Redis, concurrency = 4): Worker<JobMessage> {
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
        const result = await def.run(deps, value, { id: row.id, accountId: row.accountId });
        await finishJob(deps.database.db, row.id, { status: 'succeeded', result: result ?? null });
        log.info('job succeeded');
        return { ok: true };
      } catch (err) {
        const error =
          err instanceof AppError
            ? { code: err.code, message: err.message, ...err.extras }
            : { code: 'internal', message: 'The job failed on our side.' };
        if (!(err instanceof AppError)) log.error('job failed', { error: (err as Error).message, stack: (err as Error).stack });
        await finishJob(deps.database.db, row.id, { status: 'failed', error });
        return { ok: false };
      }
    },
    { connection, prefix: deps.config.redisPrefix, concurrency },
  );
  worker.on('error', (err) => deps.logger.error('job worker error', { error: err.message }));
  return worker;
}
