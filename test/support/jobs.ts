import Joi from 'joi';
import { AppError, defineJob } from '@teamchat/core';

/**
 * Test-only job types. They are registered only when a test imports this module, never by
 * production code (docs/api.md, 'Jobs').
 */

/** Does nothing but echo its payload: checks the runner end to end. */
export const echoJob = defineJob<{ value: unknown }>({
  type: 'test.echo',
  payload: Joi.object({ value: Joi.any() }),
  async run(_deps, payload) {
    return { echoed: payload.value };
  },
});

/** Runs of each flaky job, by job id (the worker runs in the test's process). */
export const flakyRuns = new Map<string, number>();

/** Throws a plain Error (a transient fault, like a dropped connection) on its first `fail` runs, then succeeds. */
export const flakyJob = defineJob<{ fail: number }>({
  type: 'test.flaky',
  payload: Joi.object({ fail: Joi.number().integer().min(0).required() }),
  async run(_deps, payload, job) {
    const runs = (flakyRuns.get(job.id) ?? 0) + 1;
    flakyRuns.set(job.id, runs);
    if (runs <= payload.fail) throw new Error(`transient failure ${runs}`);
    return { runs };
  },
});

/** Always fails with a domain error: never retried. */
export const refusingJob = defineJob<Record<string, never>>({
  type: 'test.refusing',
  payload: Joi.object({}),
  run(_deps, _payload, job) {
    flakyRuns.set(job.id, (flakyRuns.get(job.id) ?? 0) + 1);
    return Promise.reject(new AppError('not_found', 'The thing is gone.'));
  },
});
