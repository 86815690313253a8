import Joi from 'joi';
import type { Deps } from '../context';

/**
 * The typed job catalogue: type → payload schema and handler. Handlers live with their domain;
 * a payload that fails its schema fails the job without retry. A handler that throws an AppError
 * (a domain outcome) fails the job at once; anything else (a dropped connection, a deadlock) is
 * retried with backoff (JOB_RETRY). Only test code registers test-only job types
 * (test/support/jobs.ts).
 */
export interface JobDefinition<P = unknown> {
  type: string;
  payload: Joi.ObjectSchema<P>;
  run(deps: Deps, payload: P, job: { id: string; accountId: string }): Promise<unknown>;
}

/**
 * Retries of a job that failed with anything but an AppError: 10 attempts in all, exponential
 * backoff from 1 s (1, 2, 4 … 256 s between attempts, about 8.5 minutes overall), then failed.
 */
export const JOB_RETRY = { attempts: 10, backoff: { type: 'exponential' as const, delay: 1_000 } };

const registry = new Map<string, JobDefinition<never>>();

export function defineJob<P>(def: JobDefinition<P>): JobDefinition<P> {
  registry.set(def.type, def as unknown as JobDefinition<never>);
  return def;
}

export function jobDefinition(type: string): JobDefinition<unknown> | undefined {
  return registry.get(type) as JobDefinition<unknown> | undefined;
}

/** Every registered job type (production code registers only real ones; tests check that). */
export function registeredJobTypes(): string[] {
  return [...registry.keys()].sort();
}
