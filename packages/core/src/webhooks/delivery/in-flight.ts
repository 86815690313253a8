import { createHash } from 'node:crypto';
import type Redis from 'ioredis';
import { countSeats } from '../../accounts/accounts';
import type { Deps } from '../../context';
import { randomToken } from '../../ids';

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
 * KEYS[1] the account's lease set. ARGV[1] lease ms, ARGV[2] limit, ARGV[3] token.
 * Expired leases are dropped first; returns 1 when the lease was granted.
 */
const ACQUIRE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[1]), ARGV[3])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[1]) * 2)
return 1
`;
const ACQUIRE_SHA = createHash('sha1').update(ACQUIRE).digest('hex');

async function evalAcquire(redis: Redis, key: string, args: string[]): Promise<number> {
  try {
    return (await redis.evalsha(ACQUIRE_SHA, 1, key, ...args)) as number;
  } catch (err) {
    if (!(err instanceof Error) || !err.message.startsWith('NOSCRIPT')) throw err;
    return (await redis.eval(ACQUIRE, 1, key, ...args)) as number;
  }
}

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
  const limit = inFlightLimit(await seatsOf(deps, accountId));
  const key = inFlightKey(deps.config.redisPrefix, accountId);
  const token = randomToken(16);
  const granted = await evalAcquire(deps.redis, key, [String(leaseMs), String(limit), token]);
  if (granted !== 1) return null;
  return {
    release: async () => {
      await deps.redis.zrem(key, token).catch(() => undefined);
    },
  };
}
