import type { RedisClient } from '../../redis';
import { manualDeliveryKey, type RedisKeyConfig } from '../../redis-keys';
import { AppError } from '../../errors';
import type { Logger } from '../../logger';
import { redisAvailability } from '../../limits/availability';
import { LocalWindowCounter } from '../../limits/local-window';
import { RedisScript } from '../../limits/units';

/**
 * The per-endpoint limits of deliveries asked for by hand (spec: Limits): test events 10 per
 * minute, replays 60 per hour. A fixed window per endpoint in Redis, shared by every API
 * process; over it: 429 rate_limited with Retry-After and the scope hit. While Redis is away the
 * window is counted in this process (docs/limits.md "When Redis is away"), as the minute's calls
 * are: the limit still bites, and a test or a replay is never refused with a 500 for it.
 */
export const MANUAL_DELIVERY_LIMITS = {
  test: { limit: 10, windowS: 60, scope: 'webhook_test_per_minute' },
  replay: { limit: 60, windowS: 3600, scope: 'webhook_replay_per_hour' },
} as const;

export type ManualDeliveryKind = keyof typeof MANUAL_DELIVERY_LIMITS;

/** While Redis is away each process counts the windows on its own, one counter per kind. */
const localWindows = new WeakMap<RedisClient, Record<ManualDeliveryKind, LocalWindowCounter>>();
function localWindow(redis: RedisClient, kind: ManualDeliveryKind): LocalWindowCounter {
  let counters = localWindows.get(redis);
  if (!counters) {
    counters = { test: new LocalWindowCounter(MANUAL_DELIVERY_LIMITS.test.windowS * 1000), replay: new LocalWindowCounter(MANUAL_DELIVERY_LIMITS.replay.windowS * 1000) };
    localWindows.set(redis, counters);
  }
  return counters[kind];
}

/** Counts one manual delivery of `kind` to the endpoint (or mirror) in its window (redis-keys.ts `manualDeliveryKey`); over the limit: 429. */
export async function assertManualDeliveryAllowed(redis: RedisClient, keys: RedisKeyConfig, kind: ManualDeliveryKind, endpointId: string, log: Logger): Promise<void> {
  const rule = MANUAL_DELIVERY_LIMITS[kind];
  const key = manualDeliveryKey(keys, kind, endpointId);
  const { count, retryAfterS } = await countInWindow(redis, key, kind, log);
  if (count <= rule.limit) return;
  const retryAfter = Math.max(1, retryAfterS);
  const what = kind === 'test' ? `${rule.limit} test events per minute` : `${rule.limit} replays per hour`;
  throw new AppError(
    'rate_limited',
    `This endpoint allows ${what}; retry after ${retryAfter} s.`,
    { scope: rule.scope, limit: rule.limit, retry_after: retryAfter },
    { 'Retry-After': String(retryAfter) },
  );
}

/** `inRedis` while Redis is usable, else `inProcess` on this process's windows (availability.ts `inRedisElse`). */
function inRedisElseLocal<T>(redis: RedisClient, log: Logger, inRedis: () => Promise<T>, inProcess: (nowMs: number) => T): Promise<T> {
  return redisAvailability(redis).inRedisElse('manual_limit_local', log, Date.now(), inRedis, inProcess);
}

/** One more in the key's window: the count so far and the seconds until the window ends. */
function countInWindow(redis: RedisClient, key: string, kind: ManualDeliveryKind, log: Logger): Promise<{ count: number; retryAfterS: number }> {
  const rule = MANUAL_DELIVERY_LIMITS[kind];
  return inRedisElseLocal(redis, log, async () => {
    const result = await redis.multi().incr(key).expire(key, rule.windowS, 'NX').ttl(key).exec();
    return { count: Number(result?.[0]?.[1] ?? 0), retryAfterS: Number(result?.[2]?.[1] ?? rule.windowS) };
  }, (nowMs) => {
    const w = localWindow(redis, kind).hit(key, nowMs);
    return { count: w.count, retryAfterS: Math.ceil((w.resetAt - nowMs) / 1000) };
  });
}

/** How many more manual deliveries of `kind` the endpoint (or mirror) may have in its current window. */
export function manualDeliveriesLeft(redis: RedisClient, keys: RedisKeyConfig, kind: ManualDeliveryKind, endpointId: string, log: Logger): Promise<number> {
  const rule = MANUAL_DELIVERY_LIMITS[kind];
  const key = manualDeliveryKey(keys, kind, endpointId);
  return inRedisElseLocal(redis, log,
    async () => Math.max(0, rule.limit - Number((await redis.get(key)) ?? 0)),
    (nowMs) => Math.max(0, rule.limit - (localWindow(redis, kind).peek(key, nowMs)?.count ?? 0)));
}

/** KEYS: the window's counter. ARGV: n, limit, window s. Returns {1, 0} when taken, else {0, ttl}. */
const TAKE_MANY = new RedisScript(`
local used = tonumber(redis.call('GET', KEYS[1]) or '0')
if used + tonumber(ARGV[1]) > tonumber(ARGV[2]) then return {0, redis.call('TTL', KEYS[1])} end
redis.call('INCRBY', KEYS[1], ARGV[1])
redis.call('EXPIRE', KEYS[1], ARGV[3], 'NX')
return {1, 0}`);

/** Takes `n` manual deliveries of the window at once, or none (a bulk replay): taken, or the seconds until the window ends. */
export function takeManualDeliveries(
  redis: RedisClient, keys: RedisKeyConfig, kind: ManualDeliveryKind, endpointId: string, n: number, log: Logger,
): Promise<{ taken: true } | { taken: false; retryAfterS: number }> {
  const rule = MANUAL_DELIVERY_LIMITS[kind];
  const key = manualDeliveryKey(keys, kind, endpointId);
  return inRedisElseLocal<{ taken: true } | { taken: false; retryAfterS: number }>(redis, log, async () => {
    const [ok, ttl] = await TAKE_MANY.run<[number, number]>(redis, [key], [n, rule.limit, rule.windowS]);
    return ok === 1 ? { taken: true } : { taken: false, retryAfterS: Math.max(1, ttl > 0 ? ttl : rule.windowS) };
  }, (nowMs) => {
    const counter = localWindow(redis, kind);
    const open = counter.peek(key, nowMs);
    if ((open?.count ?? 0) + n > rule.limit) return { taken: false, retryAfterS: Math.max(1, Math.ceil(((open?.resetAt ?? nowMs) - nowMs) / 1000)) };
    counter.hit(key, nowMs, n);
    return { taken: true };
  });
}
