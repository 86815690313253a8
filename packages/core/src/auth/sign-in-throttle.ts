import type Redis from 'ioredis';
import { createHash } from 'node:crypto';
import { AppError } from '../errors';

/** Failed sign-ins allowed per email in the window before further attempts are refused. */
export const SIGN_IN_MAX_FAILURES = 10;
/** The window, in seconds (15 minutes), counted from the first failure. */
export const SIGN_IN_WINDOW_S = 15 * 60;

function key(prefix: string, email: string): string {
  // Hashed so the Redis keyspace holds no email addresses.
  return `${prefix}:signin:${createHash('sha256').update(email.trim().toLowerCase()).digest('hex').slice(0, 32)}`;
}

/** Refuses with 429 rate_limited (scope `sign_in`) once an email has too many recent failures. */
export async function assertSignInAllowed(redis: Redis, prefix: string, email: string): Promise<void> {
  const k = key(prefix, email);
  const [failures, ttl] = await Promise.all([redis.get(k), redis.ttl(k)]);
  if (Number(failures ?? 0) >= SIGN_IN_MAX_FAILURES) {
    const retryAfter = Math.max(1, ttl);
    throw new AppError(
      'rate_limited',
      `Too many failed sign-ins for this email; retry after ${retryAfter} s.`,
      { scope: 'sign_in', retry_after: retryAfter },
      { 'Retry-After': String(retryAfter) },
    );
  }
}

/** Counts a failed sign-in; the window starts at the first failure. */
export async function recordSignInFailure(redis: Redis, prefix: string, email: string): Promise<void> {
  const k = key(prefix, email);
  await redis.multi().incr(k).expire(k, SIGN_IN_WINDOW_S, 'NX').exec();
}

/** A successful sign-in clears the count. */
export async function clearSignInFailures(redis: Redis, prefix: string, email: string): Promise<void> {
  await redis.del(key(prefix, email));
}
