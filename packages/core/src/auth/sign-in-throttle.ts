import type Redis from 'ioredis';
import { createHash } from 'node:crypto';
import type { Logger } from '../logger';
import { redisAvailability } from '../limits/availability';
import { LocalWindowCounter } from '../limits/local-window';
import { rateLimited } from '../limits/refusals';

/** Failed sign-ins allowed per email in the window before further attempts are refused. */
export const SIGN_IN_MAX_FAILURES = 10;
/** The window, in seconds (15 minutes), counted from the first failure. */
export const SIGN_IN_WINDOW_S = 15 * 60;

function key(prefix: string, email: string): string {
  // Hashed so the Redis keyspace holds no email addresses.
  return `${prefix}:signin:${createHash('sha256').update(email.trim().toLowerCase()).digest('hex').slice(0, 32)}`;
}

/**
 * While Redis is away failures are counted in this process (docs/limits.md, 'When Redis is away'), so the throttle
 * still holds per process; once Redis answers again its count is the one that matters.
 */
const localCounts = new WeakMap<Redis, LocalWindowCounter>();
function local(redis: Redis): LocalWindowCounter {
  let counter = localCounts.get(redis);
  if (!counter) {
    counter = new LocalWindowCounter(SIGN_IN_WINDOW_S * 1000);
    localCounts.set(redis, counter);
  }
  return counter;
}

/** Runs `op` on Redis when it is usable; undefined (after counting the degraded decision) when not. */
async function onRedis<T>(redis: Redis, log: Logger | undefined, op: () => Promise<T>): Promise<{ value: T } | undefined> {
  const availability = redisAvailability(redis);
  let error: unknown;
  if (availability.usable()) {
    try {
      return { value: await op() };
    } catch (err) {
      error = err;
      availability.failed();
    }
  }
  availability.degraded('sign_in_throttle_local', log, Date.now(), error);
  return undefined;
}

const refuse = (retryAfterS: number) => rateLimited({
  scope: 'sign_in',
  retryAfterS,
  message: (s) => `Too many failed sign-ins for this email; retry after ${s} s.`,
});

/** Refuses with 429 rate_limited (scope `sign_in`) once an email has too many recent failures. */
export async function assertSignInAllowed(redis: Redis, prefix: string, email: string, log?: Logger): Promise<void> {
  const k = key(prefix, email);
  const got = await onRedis(redis, log, () => Promise.all([redis.get(k), redis.ttl(k)]));
  if (got) {
    const [failures, ttl] = got.value;
    if (Number(failures ?? 0) >= SIGN_IN_MAX_FAILURES) throw refuse(ttl);
    return;
  }
  const now = Date.now();
  const w = local(redis).peek(k, now);
  if (w && w.count >= SIGN_IN_MAX_FAILURES) throw refuse(Math.ceil((w.resetAt - now) / 1000));
}

/** Counts a failed sign-in; the window starts at the first failure. */
export async function recordSignInFailure(redis: Redis, prefix: string, email: string, log?: Logger): Promise<void> {
  const k = key(prefix, email);
  const done = await onRedis(redis, log, () => redis.multi().incr(k).expire(k, SIGN_IN_WINDOW_S, 'NX').exec());
  if (!done) local(redis).hit(k, Date.now());
}

/** A successful sign-in clears the count. */
export async function clearSignInFailures(redis: Redis, prefix: string, email: string, log?: Logger): Promise<void> {
  const k = key(prefix, email);
  local(redis).reset(k);
  await onRedis(redis, log, () => redis.del(k));
}
