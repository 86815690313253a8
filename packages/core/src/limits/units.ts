import { createHash } from 'node:crypto';
import { bySlot, type RedisClient } from '../redis';
import type { RedisKeyConfig } from '../redis-keys';
import type { Deps } from '../context';
import { READ_UNIT_BYTES, type Plan, type PlanLimits } from '../plans';
import { nextUtcMidnight, unitsKey } from './keys';

/**
 * Daily call units per seat (spec: Limits). The ONE counter both the API (every call under an
 * account) and the worker (every webhook delivery attempt) spend: one Redis key per seat per
 * UTC day (keys.ts), checked and charged atomically by a Lua script, so any number of processes
 * agree. The API charges a call's first unit together with its per-minute count in one script
 * (call-charge.ts); this module charges everything else (a large read's tail, deliveries).
 */

/** Kept this long after the day ends (ms), so a process whose clock lags a little still finds its key. */
export const UNITS_KEY_GRACE_MS = 60 * 60 * 1000;

/**
 * Charges several seats at once: KEYS[k] the k-th seat's counter for one UTC day; ARGV[4k-3]
 * units to charge (integer >= 0), ARGV[4k-2] the day's limit, ARGV[4k-1] key TTL in ms, ARGV[4k]
 * the mode: "1" = all or none (refused when used + units would pass the limit), "0" = charge
 * regardless, "2" = as many as are left (at most `units`; webhook attempts, each a unit of its
 * own, so a seat with 3 units left sends 3 of its 4 attempts rather than none).
 * Returns { units charged, used after the call } per key, flat: {charged1, used1, charged2, ...}.
 */
const CHARGE_SCRIPT = `
local out = {}
for k = 1, #KEYS do
  local a = 4 * (k - 1)
  local used = tonumber(redis.call('GET', KEYS[k]) or '0')
  local units = tonumber(ARGV[a + 1])
  local limit = tonumber(ARGV[a + 2])
  local mode = ARGV[a + 4]
  if mode == '1' and used + units > limit then
    units = 0
  elseif mode == '2' then
    units = math.max(0, math.min(units, limit - used))
  end
  if units > 0 or mode == '0' then
    used = redis.call('INCRBY', KEYS[k], units)
    if redis.call('PTTL', KEYS[k]) < 0 then
      redis.call('PEXPIRE', KEYS[k], ARGV[a + 3])
    end
  end
  out[2 * k - 1] = units
  out[2 * k] = used
end
return out
`;

export interface UnitUsage {
  /** units spent today (may pass `limit` by the tail of one large read, see docs/api.md "Fair-use limits") */
  used: number;
  limit: number;
  remaining: number;
  /** the next 00:00 UTC after `now` */
  resetsAt: Date;
}

export interface ChargeResult extends UnitUsage {
  /** the whole charge went through (as many as asked: `charged === units`) */
  allowed: boolean;
  /** units charged: all or 0 for an all-or-none charge, up to what was left for a partial one */
  charged: number;
}

/**
 * How a charge meets the limit: `all` or none (a call), `regardless` (the tail of a read whose
 * size is known only after its response was built), or `partial`: as many units as are left
 * (attempts that are each a unit of their own).
 */
export type ChargeMode = 'all' | 'regardless' | 'partial';
const MODE_ARG: Record<ChargeMode, string> = { all: '1', regardless: '0', partial: '2' };

export interface SeatRef {
  redis: RedisClient;
  /** how keys are named (deps.config) */
  keys: RedisKeyConfig;
  accountId: string;
  /** the seat's person: actor.userId, or the webhook endpoint's creator */
  seatUserId: string;
  /** the account's plan limits (config.planLimits[plan]) */
  limits: Pick<PlanLimits, 'unitsPerDay'> & Partial<PlanLimits>;
  /** from deps.now(), never the wall clock: tests move it to the next UTC day */
  now: Date;
}

/** Call units a read costs for a response body of `bytes`: 1 per 16 KB started, minimum 1. */
export function readCost(bytes: number): number {
  return Math.max(1, Math.ceil(bytes / READ_UNIT_BYTES));
}

export function usage(used: number, limit: number, now: Date): UnitUsage {
  return { used, limit, remaining: Math.max(0, limit - used), resetsAt: nextUtcMidnight(now) };
}

/** TTL (ms) of the units key of `now`'s day: to the end of the day plus the grace. */
export function unitsKeyTtlMs(now: Date): number {
  return nextUtcMidnight(now).getTime() - now.getTime() + UNITS_KEY_GRACE_MS;
}

/** A Lua script run by EVALSHA, loaded with EVAL on the first NOSCRIPT (first use, or after a Redis restart). */
export class RedisScript {
  /** every script defined in this process (the modules loaded define theirs): loaded at warm-up */
  static readonly defined: RedisScript[] = [];
  readonly sha: string;
  constructor(readonly source: string) {
    this.sha = createHash('sha1').update(source).digest('hex');
    RedisScript.defined.push(this);
  }

  /** Loads every defined script into Redis (SCRIPT LOAD), so no first use pays a NOSCRIPT and an EVAL. */
  static async loadAll(redis: RedisClient): Promise<number> {
    // On a cluster each master keeps its own script cache.
    const nodes = 'nodes' in redis && typeof redis.nodes === 'function' ? redis.nodes('master') : [redis];
    await Promise.all(nodes.flatMap((node) => RedisScript.defined.map((s) => node.script('LOAD', s.source))));
    return RedisScript.defined.length;
  }

  async run<T>(redis: RedisClient, keys: string[], args: Array<string | number>): Promise<T> {
    try {
      return (await redis.evalsha(this.sha, keys.length, ...keys, ...args)) as T;
    } catch (err) {
      if (!isNoScript(err)) throw err;
      return (await redis.eval(this.source, keys.length, ...keys, ...args)) as T;
    }
  }
}

function isNoScript(err: unknown): boolean {
  return err instanceof Error && err.message.startsWith('NOSCRIPT');
}

const chargeScript = new RedisScript(CHARGE_SCRIPT);

/** A charge of `units` to one seat; `mode` as ChargeMode says (default `all`). */
export type UnitCharge = SeatRef & { units: number; mode?: ChargeMode };

/**
 * Charges `units` to the seat's counter for the UTC day of `now`, atomically.
 * By default (`all`) nothing is charged and `allowed` is false when the charge would pass the
 * day's limit; `regardless` charges the units anyway (the tail of a read whose size is known
 * only after its response was built); `partial` charges as many as are left.
 */
export async function chargeUnits(input: UnitCharge): Promise<ChargeResult> {
  const [charged] = await chargeUnitsMany(input.redis, [input]);
  return charged;
}

/**
 * chargeUnits for several seats in ONE Redis command (a webhook round charges each endpoint
 * creator's seat its attempts), each seat in its own mode.
 */
export async function chargeUnitsMany(redis: RedisClient, inputs: readonly UnitCharge[]): Promise<ChargeResult[]> {
  for (const i of inputs) {
    if (!Number.isInteger(i.units) || i.units < 0) throw new RangeError(`units must be a non-negative integer, got ${i.units}`);
  }
  // One script on one Redis; on a cluster one per hash slot (seats of different accounts), each seat still all or none.
  const out = new Array<ChargeResult>(inputs.length);
  const indexed = inputs.map((input, n) => ({ input, n }));
  await Promise.all(bySlot(redis, indexed, ({ input: i }) => unitsKey(i.keys, i.accountId, i.seatUserId, i.now)).map(async (group) => {
    const flat = await runCharges(redis, group.map((g) => g.input));
    group.forEach(({ input: i, n }, k) => {
      const charged = Number(flat[2 * k]);
      out[n] = { allowed: charged === i.units, charged, ...usage(Number(flat[2 * k + 1]), i.limits.unitsPerDay, i.now) };
    });
  }));
  return out;
}

/** The charge script over the given seats at once (keys of one hash slot on a cluster). */
async function runCharges(redis: RedisClient, inputs: readonly UnitCharge[]): Promise<number[]> {
  if (inputs.length === 0) return [];
  return chargeScript.run<number[]>(
    redis,
    inputs.map((i) => unitsKey(i.keys, i.accountId, i.seatUserId, i.now)),
    inputs.flatMap((i) => [i.units, i.limits.unitsPerDay, unitsKeyTtlMs(i.now), MODE_ARG[i.mode ?? 'all']]),
  );
}

/** The seat's use today, without charging (GET /accounts/{id}). */
export async function unitUsage(input: SeatRef): Promise<UnitUsage> {
  const raw = await input.redis.get(unitsKey(input.keys, input.accountId, input.seatUserId, input.now));
  return usage(raw === null ? 0 : Number(raw), input.limits.unitsPerDay, input.now);
}

/** The seat reference for a seat of an account on `plan`, from the process's deps (API and worker). */
export function seatOf(deps: Pick<Deps, 'redis' | 'config' | 'now'>, accountId: string, plan: Plan, seatUserId: string): SeatRef {
  const limits = deps.config.planLimits[plan];
  if (!limits) throw new Error(`unknown plan ${plan}`);
  return { redis: deps.redis, keys: deps.config, accountId, seatUserId, limits, now: deps.now() };
}
