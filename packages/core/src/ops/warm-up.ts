import { sql, type Db, type Tx } from '@teamchat/db';
import { randomToken } from '../ids';
import type { Logger } from '../logger';
import { isShuttingDown } from './shutdown';

/** One step of a process's warm-up: a name (logged with its time) and what it does. */
export interface WarmUpStep {
  name: string;
  run(): Promise<unknown>;
}

/**
 * Whether a process is warm (docs/operations.md "Readiness"): `/readyz` answers 200 only once it
 * is. A process that serves traffic (the API, the MCP server, the worker) is created cold and
 * runs its warm-up steps (pools opened, named statements prepared on every connection, Redis
 * scripts loaded, its code exercised) before it calls itself ready, so a load balancer, `npm
 * start`'s banner or a client that waits for readiness never meets its cold first seconds. Deps
 * made for tests and tools are warm from the start.
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

/**
 * A warm-up transaction waits at most this long for a lock, and runs no statement longer than
 * WARM_UP_STATEMENT_MS: another transaction holding a table it writes (a migration, a table lock,
 * a log partition being detached) must fail the step, never keep the process from becoming ready.
 */
export const WARM_UP_LOCK_WAIT_MS = 1_000;
export const WARM_UP_STATEMENT_MS = 5_000;

/** An address no one has, for a warm-up transaction's owner: a new person of its own each time. */
export function warmUpEmail(): string {
  return `warm-up-${randomToken(12)}@warm-up.invalid`;
}

/** Thrown to roll a warm-up's transaction back once its work is done. */
class WarmUpDone extends Error {}

/**
 * Runs `work` in ONE transaction that is always rolled back, under the warm-up's bounds on lock
 * waits and statements: the warm-ups that run real paths on real rows (the API's posts, the
 * worker's deliveries) write only inside it, so nothing of theirs is ever committed or seen by
 * another connection. Answers what `work` answered; rejects with its error, or with the
 * database's when a bound was passed.
 */
export async function inRolledBackTransaction<T>(db: Db, work: (tx: Tx) => Promise<T>): Promise<T> {
  let value: T | undefined;
  try {
    await db.transaction(async (tx) => {
      await tx.execute(sql.raw(`SET LOCAL lock_timeout = ${WARM_UP_LOCK_WAIT_MS}; SET LOCAL statement_timeout = ${WARM_UP_STATEMENT_MS}`));
      value = await work(tx);
      throw new WarmUpDone();
    });
  } catch (err) {
    if (!(err instanceof WarmUpDone)) throw err;
  }
  return value as T;
}
