import { createHash } from 'node:crypto';
import type Redis from 'ioredis';
import type { Deps } from '../context';
import { AppError } from '../errors';
import { READ_UNIT_BYTES, type Plan, type PlanLimits } from '../plans';

/**
 * Daily call units per seat (spec: Limits). The ONE counter both the API (every call under an
 * account) and the worker (every webhook delivery attempt) spend: one Redis key per seat per
 * UTC day, checked and charged atomically by a Lua script, so any number of processes agree.
 *
 * A seat is a person in an account, so the key names both: the same person in two accounts
 * has two seats, each on its own account's plan.
 */

/** Kept this long after the day ends (ms), so a process whose clock lags a little still finds its key. */
const KEY_GRACE_MS = 60 * 60 * 1000;

/**
 * KEYS[1] the seat's counter for one UTC day.
 * ARGV[1] units to charge (integer >= 0), ARGV[2] the day's limit, ARGV[3] key TTL in ms,
 * ARGV[4] "1" = refuse when used + units would pass the limit, "0" = charge regardless.
 * Returns { allowed (1|0), used after the call }.
 */
const CHARGE_SCRIPT = `
local used = tonumber(redis.call('GET', KEYS[1]) or '0')
local units = tonumber(ARGV[1])
if ARGV[4] == '1' and used + units > tonumber(ARGV[2]) then
  return {0, used}
end
used = redis.call('INCRBY', KEYS[1], units)
if redis.call('PTTL', KEYS[1]) < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
end
return {1, used}
`;
const CHARGE_SHA = createHash('sha1').update(CHARGE_SCRIPT).digest('hex');

export interface UnitUsage {
  /** units spent today (may pass `limit` by the tail of one large read, see docs/api.md "Fair-use limits") */
  used: number;
  limit: number;
  remaining: number;
  /** the next 00:00 UTC after `now` */
  resetsAt: Date;
}

export interface ChargeResult extends UnitUsage {
  allowed: boolean;
}

export interface SeatRef {
  redis: Redis;
  /** config.redisPrefix */
  prefix: string;
  accountId: string;
  /** the seat's person: actor.userId, or the webhook endpoint's creator */
  seatUserId: string;
  /** the account's plan limits (config.planLimits[plan]) */
  limits: Pick<PlanLimits, 'unitsPerDay'>;
  /** from deps.now(), never the wall clock: tests move it to the next UTC day */
  now: Date;
}

export function nextUtcMidnight(now: Date): Date {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1));
}

export function unitsKey(prefix: string, accountId: string, seatUserId: string, now: Date): string {
  return `${prefix}:limits:units:${accountId}:${seatUserId}:${now.toISOString().slice(0, 10)}`;
}

/** Call units a read costs for a response body of `bytes`: 1 per 16 KB started, minimum 1. */
export function readCost(bytes: number): number {
  return Math.max(1, Math.ceil(bytes / READ_UNIT_BYTES));
}

function usage(used: number, limit: number, now: Date): UnitUsage {
  return { used, limit, remaining: Math.max(0, limit - used), resetsAt: nextUtcMidnight(now) };
}

async function runCharge(redis: Redis, key: string, args: string[]): Promise<[number, number]> {
  try {
    return (await redis.evalsha(CHARGE_SHA, 1, key, ...args)) as [number, number];
  } catch (err) {
    if (!(err instanceof Error) || !err.message.startsWith('NOSCRIPT')) throw err;
    // First use on this Redis (or after SCRIPT FLUSH): EVAL loads it for the next EVALSHA.
    return (await redis.eval(CHARGE_SCRIPT, 1, key, ...args)) as [number, number];
  }
}

/**
 * Charges `units` to the seat's counter for the UTC day of `now`, atomically.
 * With `check` (the default) nothing is charged and `allowed` is false when the charge would
 * pass the day's limit; with `check: false` the units are charged regardless (the tail of a
 * read whose size is known only after its response was built).
 */
export async function chargeUnits(input: SeatRef & { units: number; check?: boolean }): Promise<ChargeResult> {
  const { redis, prefix, accountId, seatUserId, limits, now, units } = input;
  if (!Number.isInteger(units) || units < 0) throw new RangeError(`units must be a non-negative integer, got ${units}`);
  const limit = limits.unitsPerDay;
  const ttlMs = nextUtcMidnight(now).getTime() - now.getTime() + KEY_GRACE_MS;
  const [allowed, used] = await runCharge(redis, unitsKey(prefix, accountId, seatUserId, now), [
    String(units), String(limit), String(ttlMs), input.check === false ? '0' : '1',
  ]);
  return { allowed: allowed === 1, ...usage(Number(used), limit, now) };
}

/** The seat's use today, without charging (GET /accounts/{id}). */
export async function unitUsage(input: SeatRef): Promise<UnitUsage> {
  const raw = await input.redis.get(unitsKey(input.prefix, input.accountId, input.seatUserId, input.now));
  return usage(raw === null ? 0 : Number(raw), input.limits.unitsPerDay, input.now);
}

/** The seat reference for a seat of an account on `plan`, from the process's deps (API and worker). */
export function seatOf(deps: Pick<Deps, 'redis' | 'config' | 'now'>, accountId: string, plan: Plan, seatUserId: string): SeatRef {
  const limits = deps.config.planLimits[plan];
  if (!limits) throw new Error(`unknown plan ${plan}`);
  return { redis: deps.redis, prefix: deps.config.redisPrefix, accountId, seatUserId, limits, now: deps.now() };
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
