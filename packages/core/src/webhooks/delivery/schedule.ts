import type { Config } from '../../config';

/**
 * The retry schedule (spec: Delivery behaviour 2): attempt n (from 1) that fails is followed by
 * attempt n + 1 after schedule[n - 1] ms; when the schedule is exhausted the chain is `dead`.
 * Default 1m,5m,30m,2h,6h,12h,24h (WEBHOOK_RETRY_SCHEDULE): 8 attempts in all.
 */
export function retryDelayAfter(config: Pick<Config, 'webhookRetryScheduleMs'>, failedAttempt: number): number | null {
  const delay = config.webhookRetryScheduleMs[failedAttempt - 1];
  return delay === undefined ? null : delay;
}

/** Margin added to the receiver's answer time for the claim on an attempt (DNS, TLS, recording). */
export const CLAIM_MARGIN_MS = 5_000;

/** How long one worker holds an attempt (and its in-flight slot) before another may take it over. */
export function claimMs(config: Pick<Config, 'webhookTimeoutMs'>): number {
  return config.webhookTimeoutMs + CLAIM_MARGIN_MS;
}

/**
 * How long enabling holds the endpoint's event deliveries back for its test event (spec: Delivery
 * behaviour 6, the test is delivered first): the test's wait for an in-flight slot (at most the
 * answer time) and its attempt (a claim's time). The enabling request lifts the hold once the
 * test is recorded; this time bounds the wait only if that request dies first.
 */
export function enableTestHoldMs(config: Pick<Config, 'webhookTimeoutMs'>): number {
  return config.webhookTimeoutMs + claimMs(config);
}
/**
 * A delivery held for its endpoint's enable test looks again after at most this long: the
 * enabling request wakes the account once the test is recorded, and this catches a wake-up that
 * came while the row was still being given back.
 */
export const ENABLE_TEST_RECHECK_MS = 1_000;

/** `failing`: every delivery failed for this long (spec: Limits). */
export const FAILING_AFTER_MS = 24 * 60 * 60 * 1000;
/** `slow`: median latency of the last SLOW_WINDOW attempts above SLOW_MEDIAN_MS. */
export const SLOW_WINDOW = 50;
export const SLOW_MEDIAN_MS = 2_000;
/** Delivery log retention (spec: Limits). */
export const DELIVERY_LOG_RETENTION_MS = 30 * 24 * 60 * 60 * 1000;
/** While the account is read-only or suspended, deliveries wait and are looked at again after this. */
export const ACCOUNT_INACTIVE_RECHECK_MS = 60_000;
