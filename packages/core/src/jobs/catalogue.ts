import Joi from 'joi';
import type { Deps } from '../context';

/**
 * The typed job catalogue: type → payload schema and handler. Handlers live with their domain;
 * a payload that fails its schema fails the job without retry.
 */
export interface JobDefinition<P = unknown> {
  type: string;
  payload: Joi.ObjectSchema<P>;
  run(deps: Deps, payload: P, job: { id: string; accountId: string }): Promise<unknown>;
}

const registry = new Map<string, JobDefinition<never>>();

export function defineJob<P>(def: JobDefinition<P>): JobDefinition<P> {
  registry.set(def.type, def as unknown as JobDefinition<never>);
  return def;
}

export function jobDefinition(type: string): JobDefinition<unknown> | undefined {
  return registry.get(type) as JobDefinition<unknown> | undefined;
}

/** A job that does nothing but echo its payload: used to check the runner end to end. */
export const echoJob = defineJob<{ value: unknown }>({
  type: 'echo',
  payload: Joi.object({ value: Joi.any() }),
  async run(_deps, payload) {
    return { echoed: payload.value };
  },
});
