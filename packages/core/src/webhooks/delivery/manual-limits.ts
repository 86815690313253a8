import type { RedisClient } from '../../redis';
import { manualDeliveryKey, type RedisKeyConfig } from '../../redis-keys';
import { AppError } from '../../errors';

/**
 * The per-endpoint limits of deliveries asked for by hand (spec: Limits): test events 10 per
 * minute, replays 60 per hour. A fixed window per endpoint in Redis, shared by every API
 * process; over it: 429 rate_limited with Retry-After and the scope hit.
 */
export const MANUAL_DELIVERY_LIMITS = {
  test: { limit: 10, windowS: 60, scope: 'webhook_test_per_minute' },
  replay: { limit: 60, windowS: 3600, scope: 'webhook_replay_per_hour' },
} as const;

export type ManualDeliveryKind = keyof typeof MANUAL_DELIVERY_LIMITS;

/** Counts one manual delivery of `kind` to the endpoint (or mirror) in its window (redis-keys.ts `manualDeliveryKey`); over the limit: 429. */
export async function assertManualDeliveryAllowed(redis: RedisClient, keys: RedisKeyConfig, kind: ManualDeliveryKind, endpointId: string): Promise<void> {
  const rule = MANUAL_DELIVERY_LIMITS[kind];
  const key = manualDeliveryKey(keys, kind, endpointId);
  const result = await redis.multi().incr(key).expire(key, rule.windowS, 'NX').ttl(key).exec();
  const count = Number(result?.[0]?.[1] ?? 0);
  if (count <= rule.limit) return;
  const retryAfter = Math.max(1, Number(result?.[2]?.[1] ?? rule.windowS));
  const what = kind === 'test' ? `${rule.limit} test events per minute` : `${rule.limit} replays per hour`;
  throw new AppError(
    'rate_limited',
    `This endpoint allows ${what}; retry after ${retryAfter} s.`,
    { scope: rule.scope, limit: rule.limit, retry_after: retryAfter },
    { 'Retry-After': String(retryAfter) },
  );
}
