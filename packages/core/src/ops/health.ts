import type { Deps } from '../context';
import { isShuttingDown } from './shutdown';
import { withTimeout } from './timeout';

/** PostgreSQL and Redis must each answer within this for the process to be ready (ms). */
export const READY_TIMEOUT_MS = 1000;

export type CheckResult = 'ok' | 'failed';

/**
 * What a process needs to serve. The API and the MCP server serve without Redis (docs/limits.md
 * "When Redis is away": their limits and the MCP session cap are kept in the process meanwhile),
 * so Redis is `optional` there: were it required, a Redis outage would take every API or MCP
 * replica out of its load balancer and turn a degraded service into none. The worker's queues
 * live in Redis: `required`.
 */
export interface ReadinessNeeds {
  redis: 'required' | 'optional';
}

/** The API's needs (both public hosts and its operations port). */
export const API_READINESS: ReadinessNeeds = { redis: 'optional' };
/** The MCP server's needs (its operations port). */
export const MCP_READINESS: ReadinessNeeds = { redis: 'optional' };
/** The worker's needs. */
export const WORKER_READINESS: ReadinessNeeds = { redis: 'required' };

export interface Readiness {
  /** 200 when ready (or degraded), 503 otherwise */
  httpStatus: 200 | 503;
  body: {
    /** `degraded`: ready, with an optional part (Redis) failing */
    status: 'ready' | 'degraded' | 'unavailable';
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
 * ops/warm-up.ts), PostgreSQL answers `SELECT 1` and, where `needs` requires it, Redis answers
 * PING, each within `timeoutMs`, and the process is not shutting down. An optional Redis that
 * fails leaves the process ready, `degraded`. The body names which part failed, never a host
 * name or an error text (the endpoint is unauthenticated).
 */
export async function checkReadiness(
  deps: Pick<Deps, 'database' | 'redis' | 'warmth'>, needs: ReadinessNeeds, timeoutMs = READY_TIMEOUT_MS,
): Promise<Readiness> {
  const [postgres, redis] = await Promise.all([
    check(() => deps.database.pool.query('SELECT 1'), timeoutMs, 'postgres'),
    check(() => deps.redis.ping(), timeoutMs, 'redis'),
  ]);
  const draining = isShuttingDown();
  const warm = deps.warmth.warm;
  const ready = postgres === 'ok' && (redis === 'ok' || needs.redis === 'optional') && warm && !draining;
  const status = !ready ? 'unavailable' : redis === 'ok' ? 'ready' : 'degraded';
  return {
    httpStatus: ready ? 200 : 503,
    body: { status, checks: { postgres, redis, warm: warm ? 'ok' : 'pending' }, ...(draining ? { shutting_down: true as const } : {}) },
  };
}

/** Liveness: the process runs its event loop. Nothing external is checked, so a restart never cascades. */
export function liveness(): { status: 'ok' } {
  return { status: 'ok' };
}
