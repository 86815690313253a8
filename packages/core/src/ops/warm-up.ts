import type { Logger } from '../logger';
import { isShuttingDown } from './shutdown';

/** One step of a process's warm-up: a name (logged with its time) and what it does. */
export interface WarmUpStep {
  name: string;
  run(): Promise<unknown>;
}

/**
 * Whether a process is warm (docs/operations.md "Readiness"): `/readyz` answers 200 only once it
 * is. A process that serves traffic (the API, the worker) is created cold and runs its warm-up
 * steps (pools opened, named statements prepared on every connection, Redis scripts loaded, its
 * code exercised) before it calls itself ready, so a load balancer, `npm start`'s banner or a
 * client that waits for readiness never meets its cold first seconds. Deps made for tests and
 * tools are warm from the start.
 */
export class Warmth {
  private state: 'cold' | 'warming' | 'warm' | 'failed';
  /** the warm-up under way, or the last one (settled) */
  private running: Promise<void> = Promise.resolve();

  constructor(warm = true) {
    this.state = warm ? 'warm' : 'cold';
  }

  get warm(): boolean {
    return this.state === 'warm';
  }

  /**
   * Runs the steps in order, then marks the process warm. A failed step is logged and the
   * process is marked warm anyway: a warm-up is an optimisation, never a reason to stay out of
   * service (PostgreSQL and Redis are still checked by every /readyz). A shutdown signal cuts it
   * short: no step starts after it, a step it made fail is not a failure, and the process stays
   * unready (docs/operations.md "Graceful shutdown").
   */
  run(steps: readonly WarmUpStep[], logger: Logger): Promise<void> {
    this.running = this.runSteps(steps, logger);
    return this.running;
  }

  /** Resolves once no warm-up step is running: a process closes its pools only then (createDeps' close). */
  idle(): Promise<void> {
    return this.running;
  }

  private async runSteps(steps: readonly WarmUpStep[], logger: Logger): Promise<void> {
    this.state = 'warming';
    const started = performance.now();
    const times: Record<string, number> = {};
    for (const step of steps) {
      let error: string | undefined;
      const t = performance.now();
      if (!isShuttingDown()) {
        try {
          await step.run();
        } catch (err) {
          error = (err as Error).message;
        }
      }
      // After a shutdown signal no step starts, and a step it made fail is not a failure.
      if (isShuttingDown()) {
        logger.info('warm-up cut short by shutdown', { step: step.name, ...(error ? { error } : {}) });
        return;
      }
      if (error) logger.warn('warm-up step failed; going on', { step: step.name, error });
      times[step.name] = Math.round(performance.now() - t);
    }
    this.state = 'warm';
    logger.info('warm', { ms: Math.round(performance.now() - started), steps_ms: times });
  }
}
