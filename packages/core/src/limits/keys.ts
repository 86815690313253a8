import { seatLimitKey, type RedisKeyConfig } from '../redis-keys';

/*
 * The seat limits' keys (their scheme is redis-keys.ts `seatLimitKey`, where every Redis key is
 * named): the per-minute window and the day's units of one seat.
 */

/** The seat's per-minute window. */
export function minuteKey(keys: RedisKeyConfig, accountId: string, seatUserId: string): string {
  return seatLimitKey(keys, 'minute-window', accountId, seatUserId);
}

const DAY_MS = 86_400_000;
/** The last UTC day formatted (every call of a day formats the same one; toISOString costs µs). */
let lastDay = { n: Number.NaN, text: '' };

/** `YYYY-MM-DD` of `now`'s UTC day. */
export function utcDay(now: Date): string {
  const n = Math.floor(now.getTime() / DAY_MS);
  if (n !== lastDay.n) lastDay = { n, text: now.toISOString().slice(0, 10) };
  return lastDay.text;
}

/** The seat's unit counter for the UTC day of `now`. */
export function unitsKey(keys: RedisKeyConfig, accountId: string, seatUserId: string, now: Date): string {
  return seatLimitKey(keys, 'units', accountId, seatUserId, utcDay(now));
}

export function nextUtcMidnight(now: Date): Date {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1));
}
