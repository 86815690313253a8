/**
 * The ONE Redis key scheme of the seat limits (spec: Limits rule 1, a seat is a person in an
 * account): `<REDIS_PREFIX>:limits:<what>:<accountId>:<userId>[:<UTC day>]`.
 *
 * - `minute-window` — a hash `{ s: window start (ms, deps.now()), n: calls }`, the per-minute count;
 * - `units` … `:<YYYY-MM-DD>` — an integer, the call units spent that UTC day (API and worker).
 */
export type SeatLimitKind = 'minute-window' | 'units';

export function seatLimitKey(prefix: string, kind: SeatLimitKind, accountId: string, seatUserId: string, day?: string): string {
  const base = `${prefix}:limits:${kind}:${accountId}:${seatUserId}`;
  return day === undefined ? base : `${base}:${day}`;
}

/** The seat's per-minute window. */
export function minuteKey(prefix: string, accountId: string, seatUserId: string): string {
  return seatLimitKey(prefix, 'minute-window', accountId, seatUserId);
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
export function unitsKey(prefix: string, accountId: string, seatUserId: string, now: Date): string {
  return seatLimitKey(prefix, 'units', accountId, seatUserId, utcDay(now));
}

export function nextUtcMidnight(now: Date): Date {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1));
}
