import type { Deps } from '../context';
import { isShuttingDown } from './shutdown';
import { withTimeout } from './timeout';

/** PostgreSQL and Redis must each answer within this for the process to be ready (ms). */
export const READY_TIMEOUT_MS = 1000;

export type CheckResult = 'ok' | 'failed';

export interface Readiness {
  /** 200 when ready, 503 otherwise */
  httpStatus: 200 | 503;
  body: {
    status: 'ready' | 'unavailable';
    /** warm: 'pending' while the process warms up (docs/operations.md "Readiness") */
    checks: { postgres: CheckResult; redis: CheckResult; warm: 'ok' | 'pending' };
    /** present while a graceful shutdown drains the process: load balancers stop sending */
    shutting_down?: true;
  };
}

async function check(probe: () => Promise<unknown>, timeoutMs: number, what: string): Promise<CheckResult> {
  try {
    await withTimeout(probe(), timeoutMs, what);
    return 'ok';
  } catch {
    return 'failed';
  }
}

/**
 * Readiness for load balancers and orchestrators: the process is warm (its warm-up ran:
 * ops/warm-up.ts), PostgreSQL answers `SELECT 1` and Redis answers PING, each within
 * `timeoutMs`, and the process is not shutting down. The body names which part
 * failed, never a host name or an error text (the endpoint is unauthenticated).
 */
export async function checkReadiness(deps: Pick<Deps, 'database' | 'redis' | 'warmth'>, timeoutMs = READY_TIMEOUT_MS): Promise<Readiness> {
  const [postgres, redis] = await Promise.all([
    check(() => deps.database.pool.query('SELECT 1'), timeoutMs, 'postgres'),
    check(() => deps.redis.ping(), timeoutMs, 'redis'),
  ]);
  const draining = isShuttingDown();
  const warm = deps.warmth.warm;
  const ready = postgres === 'ok' && redis === 'ok' && warm && !draining;
  return {
    httpStatus: ready ? 200 : 503,
    body: { status: ready ? 'ready' : 'unavailable', checks: { postgres, redis, warm: warm ? 'ok' : 'pending' }, ...(draining ? { shutting_down: true as const } : {}) },
  };
}

/** Liveness: the process runs its event loop. Nothing external is checked, so a restart never cascades. */
export function liveness(): { status: 'ok' } {
  return { status: 'ok' };
}
