import { AppError } from '../errors';
import type { UnitUsage } from './units';

/**
 * The two limit refusals, built in one place each (spec: Errors, `rate_limited` and
 * `budget_exceeded`; Limits rules 2 and 3).
 */

/** 429 rate_limited naming the scope hit, with Retry-After (seconds, at least 1). */
export function rateLimited(input: { scope: string; message: (retryAfter: number) => string; retryAfterS: number; limit?: number }): AppError {
  const retryAfter = Math.max(1, Math.ceil(input.retryAfterS));
  const extras = input.limit === undefined
    ? { scope: input.scope, retry_after: retryAfter }
    : { scope: input.scope, limit: input.limit, retry_after: retryAfter };
  return new AppError('rate_limited', input.message(retryAfter), extras, { 'Retry-After': String(retryAfter) });
}

/** 429 budget_exceeded with the spec's `budget` field and Retry-After until the reset. */
export function budgetExceeded(u: UnitUsage, now: Date): AppError {
  const retryAfter = Math.max(1, Math.ceil((u.resetsAt.getTime() - now.getTime()) / 1000));
  return new AppError(
    'budget_exceeded',
    'This seat has spent its call units for today; they reset at 00:00 UTC.',
    { scope: 'seat_units_per_day', budget: { limit: u.limit, used: u.used, resets_at: u.resetsAt.toISOString() } },
    { 'Retry-After': String(retryAfter) },
  );
}
