import type { RedisClient } from '../redis';
import type { Logger } from '../logger';

/**
 * Redis holds the limit counters, but PostgreSQL is the source of truth: while Redis is away the
 * API keeps serving and the limits degrade (docs/limits.md "When Redis is away").
 * This module decides when to try Redis, and counts and logs every decision taken without it.
 */

/** What a request got instead of its Redis-backed check. */
export type DegradedDecision =
  /** the per-minute limit counted in this process only */
  | 'minute_limit_local'
  /** the call's units were not charged (nor checked) */
  | 'units_not_charged'
  /** failed sign-ins counted in this process only */
  | 'sign_in_throttle_local'
  /** a test event or a replay counted against its endpoint's (or mirror's) limit in this process only */
  | 'manual_limit_local'
  /** the per-seat cap on concurrent MCP sessions kept in this MCP process only */
  | 'mcp_sessions_local';

const totals: Record<DegradedDecision, number> = {
  minute_limit_local: 0, units_not_charged: 0, sign_in_throttle_local: 0, manual_limit_local: 0, mcp_sessions_local: 0,
};

/** Process-wide count of each degraded decision since the process started (for a metrics collector). */
export function degradedDecisionCounts(): Record<DegradedDecision, number> {
  return { ...totals };
}

/**
 * After a failed Redis call, limits skip Redis for this long (ms) before trying again, so a Redis
 * that accepts connections but answers nothing costs one command timeout per pause, not one per request.
 */
export const REDIS_RETRY_PAUSE_MS = 1_000;
/** Each kind of degraded decision is logged at most once per this interval (ms, by deps.now()). */
export const DEGRADED_LOG_INTERVAL_MS = 60_000;

export class RedisAvailability {
  /** performance.now() before which Redis is not tried; a monotonic clock, so a test's frozen deps clock never blocks recovery */
  private pausedUntil = 0;
  private readonly lastLogAt = new Map<DegradedDecision, number>();
  private readonly suppressed = new Map<DegradedDecision, number>();

  constructor(private readonly redis: RedisClient) {}

  /** Whether to try Redis now: connected, and not within a pause after a failure. */
  usable(): boolean {
    return this.redis.status === 'ready' && performance.now() >= this.pausedUntil;
  }

  /** A Redis call failed (refused, timed out, dropped): pause before the next try. */
  failed(): void {
    this.pausedUntil = performance.now() + REDIS_RETRY_PAUSE_MS;
  }

  /**
   * THE rule of every limit kept in Redis while Redis may be away (docs/limits.md "When Redis is
   * away"): `inRedis` while Redis is usable; when it is not, or the call fails (the failure pauses
   * the next tries), `inProcess` decides instead, given the failure if there was one, and the
   * decision is counted and logged as `decision`.
   */
  async inRedisElse<T>(
    decision: DegradedDecision, log: Logger | undefined, nowMs: number,
    inRedis: () => Promise<T>, inProcess: (nowMs: number, error: unknown) => T,
  ): Promise<T> {
    let error: unknown;
    if (this.usable()) {
      try {
        return await inRedis();
      } catch (err) {
        error = err;
        this.failed();
      }
    }
    this.degraded(decision, log, nowMs, error);
    return inProcess(nowMs, error);
  }

  /**
   * Counts one degraded decision and logs a warning if this kind was not logged in the last
   * interval; the line carries how many went unlogged since the previous one.
   */
  degraded(decision: DegradedDecision, log: Logger | undefined, nowMs: number, error?: unknown): void {
    totals[decision] += 1;
    const last = this.lastLogAt.get(decision);
    // A clock moved backwards (tests) counts as a new interval.
    if (last !== undefined && nowMs >= last && nowMs - last < DEGRADED_LOG_INTERVAL_MS) {
      this.suppressed.set(decision, (this.suppressed.get(decision) ?? 0) + 1);
      return;
    }
    if (!log) return;
    this.lastLogAt.set(decision, nowMs);
    log.warn('limits degraded: Redis unavailable', {
      decision,
      suppressed: this.suppressed.get(decision) ?? 0,
      redis_status: this.redis.status,
      error: error instanceof Error ? error.message : `connection ${this.redis.status}`,
    });
    this.suppressed.set(decision, 0);
  }
}

const registry = new WeakMap<RedisClient, RedisAvailability>();

/** The availability tracker of one Redis connection (shared by every limit that uses it). */
export function redisAvailability(redis: RedisClient): RedisAvailability {
  let tracker = registry.get(redis);
  if (!tracker) {
    tracker = new RedisAvailability(redis);
    registry.set(redis, tracker);
  }
  return tracker;
}
