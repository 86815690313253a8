import { and, asc, eq, inArray, isNull, lte, mirrors, runStatement, sql, statement, webhookEndpoints, type Executor } from '@teamchat/db';
import type { Deps } from '../../context';
import { notifyEndpointDisabled } from './notify';
import { FAILING_AFTER_MS, SLOW_MEDIAN_MS, SLOW_WINDOW } from './schedule';
import { dropOpenDeliveries } from './rows';

/**
 * The endpoint's health after an attempt, and the automatic disabling rules (spec: Webhook
 * endpoint enablement): `gone` on a 410, `failing` when every attempt failed for 24 h
 * (failing_since = the first failure since the last success), `slow` when the median latency of
 * the last 50 attempts passes 2 s. Disabling drops the endpoint's open deliveries.
 */
export type AutoDisableReason = 'gone' | 'failing' | 'slow';

/** The latest start of a failure streak that is `failing` at `now`: FAILING_AFTER_MS before it. */
function failingCutoff(now: Date): Date {
  return new Date(now.getTime() - FAILING_AFTER_MS);
}

/**
 * THE `failing` rule, for endpoints and mirrors: the target is enabled, its failure streak
 * (`failingSince`, the first failure since the last success) began FAILING_AFTER_MS ago or more,
 * and no success was recorded within that time. An attempt's record judges it before recording
 * its failure; the maintenance's check (failingCandidates, disableIfFailing) judges it as time
 * passes, so the endpoint is disabled once the 24 h are over, not at the next failure. The last
 * success counts too because a failure answered before a success but recorded after it (closes
 * end in any order) starts a streak older than that success.
 */
export function failingAfter(target: { enabled: boolean; failingSince: Date | null; lastSuccessAt: Date | null }, now: Date): boolean {
  const cutoff = failingCutoff(now).getTime();
  return target.enabled && target.failingSince !== null && target.failingSince.getTime() <= cutoff
    && (target.lastSuccessAt === null || target.lastSuccessAt.getTime() <= cutoff);
}

/** An enabled endpoint (or mirror) whose failure streak is old enough for the `failing` rule to look at. */
export interface FailingCandidate {
  id: string;
  accountId: string;
  url: string;
  enabled: boolean;
  failingSince: Date | null;
  lastSuccessAt: Date | null;
}

/**
 * The enabled endpoints (or, with `of: mirrors`, mirrors) whose failure streak began at
 * failingCutoff(now) or before, oldest streak first, at most `limit`: what failingAfter may
 * judge `failing` (a streak that old with a recent success is among them; failingAfter leaves
 * it). Only the streak's start is asked here so that the rule is written once, in failingAfter.
 * Each table's partial index of the enabled ones in a streak serves it. `accountIds` narrows it
 * (tests sharing one database).
 */
export async function failingCandidates(
  db: Executor, now: Date, options: { limit: number; accountIds?: readonly string[]; of?: 'endpoints' | 'mirrors' },
): Promise<FailingCandidate[]> {
  const w = options.of === 'mirrors' ? mirrors : webhookEndpoints;
  return db
    .select({ id: w.id, accountId: w.accountId, url: w.url, enabled: w.enabled, failingSince: w.failingSince, lastSuccessAt: w.lastSuccessAt })
    .from(w)
    .where(and(
      eq(w.enabled, true), isNull(w.deletedAt), lte(w.failingSince, failingCutoff(now)),
      options.accountIds ? inArray(w.accountId, [...options.accountIds]) : undefined,
    ))
    .orderBy(asc(w.failingSince), asc(w.id))
    .limit(options.limit);
}

/**
 * failingAfter judged again with the target's row locked (`for no key update`, as an attempt's
 * record locks it): an attempt may have recorded a success since the target was picked. The
 * caller disables it in the same transaction.
 */
export async function stillFailing(tx: Executor, of: 'endpoints' | 'mirrors', id: string, now: Date): Promise<boolean> {
  const w = of === 'mirrors' ? mirrors : webhookEndpoints;
  const [row] = await tx
    .select({ enabled: w.enabled, failingSince: w.failingSince, lastSuccessAt: w.lastSuccessAt })
    .from(w)
    .where(eq(w.id, id))
    .for('no key update');
  return row !== undefined && failingAfter(row, now);
}

/**
 * Disables the endpoint for `failing` when it is stillFailing, through autoDisable, as an
 * attempt's record does: its open deliveries dropped. True when this call disabled it.
 */
export async function disableIfFailing(tx: Executor, endpointId: string, now: Date): Promise<boolean> {
  return (await stillFailing(tx, 'endpoints', endpointId, now)) && (await autoDisable(tx, endpointId, 'failing', now));
}

/** Successes closer together than this write an endpoint's health once: a busy endpoint's row is not rewritten per delivery. */
export const SUCCESS_WRITE_EVERY_MS = 1000;

/**
 * The health a success records, as SQL common to every writer of it (a single attempt's
 * recordHealth and the batch close, CLOSE_DELIVERED in packages/delivery): two CTEs, `locked`
 * and `health`, over the endpoints `endpointIds` (a subquery of ids) answered at `at` (an SQL
 * timestamptz). An endpoint is written only when its failure streak ends or its last success
 * is SUCCESS_WRITE_EVERY_MS older than `at`; `last_success_at` never moves back (closes that
 * gathered answers end in any order). The rows are locked in id order: closes run
 * concurrently, and two that locked their endpoints in different orders deadlocked under load.
 */
export function recordSuccessesSql(endpointIds: string, at: string): string {
  return `locked AS (
    SELECT w.id FROM webhook_endpoints w
     WHERE w.id IN (${endpointIds})
       AND (w.failing_since IS NOT NULL OR w.last_success_at IS NULL
            OR w.last_success_at < ${at} - make_interval(secs => ${SUCCESS_WRITE_EVERY_MS / 1000}))
     ORDER BY w.id
       FOR NO KEY UPDATE
  ), health AS (
    UPDATE webhook_endpoints w SET last_success_at = GREATEST(w.last_success_at, ${at}), failing_since = NULL
      FROM locked l
     WHERE w.id = l.id
    RETURNING w.id
  )`;
}

/** One attempt's success (recordSuccessesSql). $1 the endpoint, $2 the answer's time. */
const RECORD_SUCCESS = statement<{ n: number }>('webhook_record_success', `
  WITH ${recordSuccessesSql('SELECT $1::text', '$2::timestamptz')}
  SELECT count(*)::int AS n FROM health`);

/**
 * The endpoint's health after an answered attempt: a success by recordSuccessesSql; a failure
 * moves `last_failure_at` (never back) and starts the failure streak if none is running.
 */
export async function recordHealth(tx: Executor, endpointId: string, ok: boolean, now: Date): Promise<void> {
  if (ok) {
    await runStatement(tx, RECORD_SUCCESS, [endpointId, now]);
  } else {
    await tx
      .update(webhookEndpoints)
      .set({ lastFailureAt: sql`GREATEST(${webhookEndpoints.lastFailureAt}, ${now})`, failingSince: sql`COALESCE(${webhookEndpoints.failingSince}, ${now})` })
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

/**
 * What follows an automatic disabling once it is committed: the metric, and the owners' and
 * admins' notice and email. A notice that fails is logged; the disabling stands.
 */
export async function announceAutoDisabled(
  deps: Deps, input: { accountId: string; endpointId: string; url: string; reason: AutoDisableReason },
): Promise<void> {
  deps.metrics.endpointsDisabledTotal.inc({ reason: input.reason });
  await notifyEndpointDisabled(deps, input).catch((err: Error) =>
    deps.logger.error('notifying a disabled endpoint failed', { endpoint_id: input.endpointId, error: err.message }));
}
