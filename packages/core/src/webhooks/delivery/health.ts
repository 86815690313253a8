import { and, eq, isNull, sql, webhookEndpoints, type Executor } from '@teamchat/db';
import { FAILING_AFTER_MS, SLOW_MEDIAN_MS, SLOW_WINDOW } from './schedule';
import { dropOpenDeliveries, type EndpointRow } from './rows';

/**
 * The endpoint's health after an attempt, and the automatic disabling rules (spec: Webhook
 * endpoint enablement): `gone` on a 410, `failing` when every attempt failed for 24 h
 * (failing_since = the first failure since the last success), `slow` when the median latency of
 * the last 50 attempts passes 2 s. Disabling drops the endpoint's open deliveries.
 */
export type AutoDisableReason = 'gone' | 'failing' | 'slow';

/** Whether this failure disables the endpoint for `failing` (judged before the attempt is recorded). */
export function failingAfter(endpoint: EndpointRow, now: Date): boolean {
  return endpoint.enabled && endpoint.failingSince !== null && now.getTime() - endpoint.failingSince.getTime() >= FAILING_AFTER_MS;
}

export async function recordHealth(tx: Executor, endpointId: string, ok: boolean, now: Date): Promise<void> {
  if (ok) {
    // Skip the write when nothing changes much, so a busy endpoint's row is not rewritten per delivery.
    await tx
      .update(webhookEndpoints)
      .set({ lastSuccessAt: now, failingSince: null })
      .where(and(eq(webhookEndpoints.id, endpointId), sql`(${webhookEndpoints.failingSince} IS NOT NULL OR ${webhookEndpoints.lastSuccessAt} IS NULL OR ${webhookEndpoints.lastSuccessAt} < ${new Date(now.getTime() - 1000)})`));
  } else {
    await tx
      .update(webhookEndpoints)
      .set({ lastFailureAt: now, failingSince: sql`COALESCE(${webhookEndpoints.failingSince}, ${now})` })
      .where(eq(webhookEndpoints.id, endpointId));
  }
}

/** Median latency of the endpoint's last 50 attempts that got an answer or timed out; null below 50. */
export async function recentMedianLatency(tx: Executor, endpointId: string): Promise<number | null> {
  const result = await tx.execute<{ n: number; median: number | null }>(sql`
    SELECT count(*)::int AS n, percentile_cont(0.5) WITHIN GROUP (ORDER BY latency_ms) AS median
      FROM (SELECT latency_ms FROM webhook_deliveries
             WHERE endpoint_id = ${endpointId} AND latency_ms IS NOT NULL
             ORDER BY seq DESC LIMIT ${SLOW_WINDOW}) recent`);
  const row = result.rows[0];
  return row && row.n >= SLOW_WINDOW && row.median !== null ? Number(row.median) : null;
}

export async function isSlow(tx: Executor, endpointId: string, latencyMs: number | null): Promise<boolean> {
  // The median can only pass the bar when an attempt above it joins the window.
  if (latencyMs === null || latencyMs <= SLOW_MEDIAN_MS) return false;
  const median = await recentMedianLatency(tx, endpointId);
  return median !== null && median > SLOW_MEDIAN_MS;
}

/** Disables an enabled endpoint and drops its open deliveries; true when this call disabled it. */
export async function autoDisable(tx: Executor, endpointId: string, reason: AutoDisableReason, now: Date): Promise<boolean> {
  const rows = await tx
    .update(webhookEndpoints)
    .set({ enabled: false, disabledReason: reason, disabledAt: now, updatedAt: now, version: sql`${webhookEndpoints.version} + 1` })
    .where(and(eq(webhookEndpoints.id, endpointId), eq(webhookEndpoints.enabled, true), isNull(webhookEndpoints.deletedAt)))
    .returning({ id: webhookEndpoints.id });
  if (rows.length === 0) return false;
  await dropOpenDeliveries(tx, endpointId, `endpoint disabled (${reason})`);
  return true;
}
