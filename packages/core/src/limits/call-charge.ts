import type { RedisClient } from '../redis';
import type { Logger } from '../logger';
import { redisAvailability } from './availability';
import { minuteKey, unitsKey } from './keys';
import { LocalWindowCounter } from './local-window';
import { RedisScript, unitsKeyTtlMs, usage, type ChargeResult, type SeatRef } from './units';

/**
 * What one call under an account spends, decided in ONE Redis round trip (docs/limits.md, 'How a call is charged'): the seat's
 * per-minute count and, when the minute allows the call, its first call unit (checked). Both
 * windows run on `deps.now()` (the seat's `now`), so every API process and the tests agree on
 * one clock.
 */

/** The per-minute window (ms): a window starts at the seat's first call in it (spec: Limits, calls per minute). */
export const MINUTE_WINDOW_MS = 60_000;

/**
 * KEYS[1] the seat's minute window (hash: s = start ms, n = calls), KEYS[2] its units counter of the day.
 * ARGV[1] now (ms), ARGV[2] window (ms), ARGV[3] calls per minute, ARGV[4] units per day, ARGV[5] units key TTL (ms).
 * Returns { calls in this window (this one included), window end (ms), units: 1 charged | 0 spent | -1 not tried, units used }.
 * A call over the minute is counted but charges no unit.
 */
const CALL_SCRIPT = new RedisScript(`
local now = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local w = redis.call('HMGET', KEYS[1], 's', 'n')
local start = tonumber(w[1])
local n
if start == nil or now >= start + window then
  start = now
  n = 1
  redis.call('HSET', KEYS[1], 's', start, 'n', 1)
  redis.call('PEXPIRE', KEYS[1], window + 1000)
else
  n = redis.call('HINCRBY', KEYS[1], 'n', 1)
end
if n > tonumber(ARGV[3]) then
  return {n, start + window, -1, 0}
end
local used = tonumber(redis.call('GET', KEYS[2]) or '0')
if used + 1 > tonumber(ARGV[4]) then
  return {n, start + window, 0, used}
end
used = redis.call('INCR', KEYS[2])
if redis.call('PTTL', KEYS[2]) < 0 then
  redis.call('PEXPIRE', KEYS[2], ARGV[5])
end
return {n, start + window, 1, used}
`);

export interface CallCharge {
  minute: {
    /** calls in the seat's current window, this one included */
    used: number;
    limit: number;
    resetAt: Date;
  };
  /**
   * The call's first unit: charged (`allowed`), or refused because the day's budget is spent.
   * Null when the minute refused the call (nothing charged) or Redis was away (not charged).
   */
  units: ChargeResult | null;
  /** Redis was away: the minute was counted in this process and no unit was charged */
  degraded: boolean;
}

/** While Redis is away each process counts the minute on its own (docs/limits.md). */
const localMinutes = new WeakMap<RedisClient, LocalWindowCounter>();
function localMinute(redis: RedisClient): LocalWindowCounter {
  let counter = localMinutes.get(redis);
  if (!counter) {
    counter = new LocalWindowCounter(MINUTE_WINDOW_MS);
    localMinutes.set(redis, counter);
  }
  return counter;
}

/**
 * Counts one call of the seat in its minute and charges its first unit, atomically, in one
 * round trip. While Redis is away (availability.ts) the minute is counted in this process and
 * nothing is charged; both decisions are counted and logged at most once per interval.
 */
export async function chargeCall(input: { seat: SeatRef; callsPerMinute: number; log: Logger }): Promise<CallCharge> {
  const { seat, callsPerMinute, log } = input;
  const { redis, keys, accountId, seatUserId, now } = seat;
  const nowMs = now.getTime();
  const availability = redisAvailability(redis);
  return availability.inRedisElse<CallCharge>('minute_limit_local', log, nowMs, async () => {
    const [n, end, charged, used] = await CALL_SCRIPT.run<[number, number, number, number]>(
      redis,
      [minuteKey(keys, accountId, seatUserId), unitsKey(keys, accountId, seatUserId, now)],
      [nowMs, MINUTE_WINDOW_MS, callsPerMinute, seat.limits.unitsPerDay, unitsKeyTtlMs(now)],
    );
    return {
      minute: { used: n, limit: callsPerMinute, resetAt: new Date(end) },
      units: charged === -1 ? null : { allowed: charged === 1, charged: charged === 1 ? 1 : 0, ...usage(used, seat.limits.unitsPerDay, now) },
      degraded: false,
    };
  }, (_, error) => {
    const w = localMinute(redis).hit(`${accountId}:${seatUserId}`, nowMs);
    if (w.count <= callsPerMinute) availability.degraded('units_not_charged', log, nowMs, error);
    return { minute: { used: w.count, limit: callsPerMinute, resetAt: new Date(w.resetAt) }, units: null, degraded: true };
  });
}
