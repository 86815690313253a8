import { countSeats } from '../../accounts/accounts';
import type { Deps } from '../../context';
import { randomToken } from '../../ids';
import { RedisScript } from '../../limits';

/**
 * Webhook deliveries in flight per account (spec: Limits): max(4, ceil(seats / 25)), never more
 * than 16, across every process. Each attempt holds a lease in a Redis sorted set (member = a
 * random token, score = its expiry in Redis's own clock), so a worker killed mid-attempt leaks
 * nothing: its lease simply expires (after the claim time, see schedule.ts).
 */
export function inFlightLimit(seats: number): number {
  return Math.min(16, Math.max(4, Math.ceil(seats / 25)));
}

/**
 * Takes leases for several accounts, several slots each, in one script (one attempt asks for one
 * slot of one account; a batch round for several): KEYS the accounts' lease sets; ARGV[1] lease
 * ms, ARGV[2] token prefix, then per key its limit and how many slots are wanted. Expired leases
 * are dropped first. Each lease's token is prefix:keyIndex:i. Returns, per key, how many were
 * granted (0..wanted).
 */
const ACQUIRE = new RedisScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lease = tonumber(ARGV[1])
local out = {}
for k = 1, #KEYS do
  redis.call('ZREMRANGEBYSCORE', KEYS[k], '-inf', now)
  local free = tonumber(ARGV[1 + 2 * k]) - redis.call('ZCARD', KEYS[k])
  local n = math.min(free, tonumber(ARGV[2 + 2 * k]))
  if n < 0 then n = 0 end
  for i = 1, n do
    redis.call('ZADD', KEYS[k], now + lease, ARGV[2] .. ':' .. k .. ':' .. i)
  end
  if n > 0 then redis.call('PEXPIRE', KEYS[k], lease * 2) end
  out[k] = n
end
return out
`);

export interface Lease {
  release(): Promise<void>;
}

/** Seat counts change rarely; a minute-old count is good enough for the cap. */
const SEATS_TTL_MS = 60_000;
const seatCache = new Map<string, { seats: number; at: number }>();

async function seatsOf(deps: Pick<Deps, 'database'>, accountId: string): Promise<number> {
  const hit = seatCache.get(accountId);
  if (hit && Date.now() - hit.at < SEATS_TTL_MS) return hit.seats;
  const seats = await countSeats(deps.database.db, accountId);
  if (seatCache.size > 10_000) seatCache.clear();
  seatCache.set(accountId, { seats, at: Date.now() });
  return seats;
}

export function inFlightKey(prefix: string, accountId: string): string {
  return `${prefix}:webhooks:inflight:${accountId}`;
}

/** Takes one of the account's in-flight slots for `leaseMs`, or answers null when all are taken. */
export async function acquireInFlightSlot(
  deps: Pick<Deps, 'database' | 'redis' | 'config'>,
  accountId: string,
  leaseMs: number,
): Promise<Lease | null> {
  const leases = await acquireInFlightSlots(deps, new Map([[accountId, 1]]), leaseMs);
  return leases.granted.get(accountId) === 1 ? leases : null;
}

/** Slots of several accounts, taken together (one script) and given back together (one round trip). */
export interface Leases {
  /** granted slots per account id */
  granted: Map<string, number>;
  /**
   * Takes one of the account's granted slots out of the group (an attempt that outlives its
   * round): the group's release leaves it, and the returned function gives it back.
   */
  detach(accountId: string): () => Promise<void>;
  release(): Promise<void>;
}

/**
 * Takes up to `wanted.get(account)` in-flight slots of each account for `leaseMs`, in one
 * script: a batch's attempts of one account then run in that many lanes at once. Single attempts
 * (acquireInFlightSlot) take theirs the same way, so both share each account's cap across every
 * process; a killed worker's leases expire like any other.
 */
export async function acquireInFlightSlots(
  deps: Pick<Deps, 'database' | 'redis' | 'config'>,
  wanted: ReadonlyMap<string, number>,
  leaseMs: number,
): Promise<Leases> {
  const accounts = [...wanted.keys()];
  const granted = new Map<string, number>();
  if (accounts.length === 0) return { granted, detach: () => async () => undefined, release: async () => undefined };
  const limits = await Promise.all(accounts.map(async (a) => inFlightLimit(await seatsOf(deps, a))));
  const keys = accounts.map((a) => inFlightKey(deps.config.redisPrefix, a));
  const prefix = randomToken(16);
  const args = [String(leaseMs), prefix, ...accounts.flatMap((a, k) => [String(limits[k]), String(Math.max(0, wanted.get(a)!))])];
  const counts = await ACQUIRE.run<number[]>(deps.redis, keys, args);
  accounts.forEach((a, k) => granted.set(a, Number(counts[k] ?? 0)));
  const held = new Map(accounts.map((a, k) => [a, Array.from({ length: granted.get(a)! }, (_, i) => `${prefix}:${k + 1}:${i + 1}`)]));
  const keyOf = new Map(accounts.map((a, k) => [a, keys[k]]));
  return {
    granted,
    detach: (accountId) => {
      const token = held.get(accountId)?.pop();
      if (!token) return async () => undefined;
      return async () => {
        await deps.redis.zrem(keyOf.get(accountId)!, token).catch(() => undefined);
      };
    },
    release: async () => {
      const p = deps.redis.pipeline();
      let any = false;
      for (const [a, tokens] of held) {
        if (tokens.length === 0) continue;
        any = true;
        p.zrem(keyOf.get(a)!, ...tokens);
      }
      held.clear();
      if (any) await p.exec().catch(() => undefined);
    },
  };
}
