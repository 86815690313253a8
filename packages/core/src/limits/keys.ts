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

/** The seat's unit counter for the UTC day of `now`. */
export function unitsKey(prefix: string, accountId: string, seatUserId: string, now: Date): string {
  return seatLimitKey(prefix, 'units', accountId, seatUserId, now.toISOString().slice(0, 10));
}

export function nextUtcMidnight(now: Date): Date {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1));
}
