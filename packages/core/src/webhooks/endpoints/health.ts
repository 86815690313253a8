import { sql, type Executor } from '@teamchat/db';

/** Attempts counted by the median latency (spec: the `slow` rule's window). */
export const HEALTH_LATENCY_WINDOW = 50;
/** Window of the success rate. */
export const HEALTH_RATE_WINDOW_MS = 24 * 60 * 60 * 1000;

export interface EndpointHealth {
  /** the latest attempt answered 2xx in time */
  last_success_at: string | null;
  /** the latest attempt that failed (non-2xx, no answer in time, refused address) */
  last_failure_at: string | null;
  /** delivered ÷ attempted over the last 24 h, 0..1; null without attempts */
  success_rate_24h: number | null;
  /** attempts in that window (so a rate of 1 from 1 attempt reads as what it is) */
  attempts_24h: number;
  /** median latency of the last 50 attempts that got an answer, in ms; null without any */
  median_latency_ms: number | null;
  /** deliveries not yet finished: `pending` or `retrying` */
  pending_count: number;
}

const EMPTY: EndpointHealth = {
  last_success_at: null, last_failure_at: null, success_rate_24h: null, attempts_24h: 0, median_latency_ms: null, pending_count: 0,
};

const iso = (v: unknown): string | null => (v === null || v === undefined ? null : new Date(v as string | Date).toISOString());

/**
 * Health of endpoints, from the delivery log (one row per attempt, tests and replays included).
 * An attempt is a row with `attempted_at`: `delivered` is a success; `failed`, `retrying` and
 * `dead` are failures. One round trip for a whole page of endpoints.
 */
export async function endpointHealth(db: Executor, endpointIds: readonly string[], now: Date): Promise<Map<string, EndpointHealth>> {
  const out = new Map<string, EndpointHealth>();
  if (endpointIds.length === 0) return out;
  const since = new Date(now.getTime() - HEALTH_RATE_WINDOW_MS);
  const result = await db.execute(sql`
    SELECT e.id AS endpoint_id, agg.last_success_at, agg.last_failure_at, agg.attempts_24h, agg.delivered_24h,
           agg.pending_count, med.median_latency_ms
    FROM unnest(ARRAY[${sql.join(endpointIds.map((id) => sql`${id}`), sql`, `)}]::text[]) AS e(id)
    LEFT JOIN LATERAL (
      SELECT
        max(d.attempted_at) FILTER (WHERE d.status = 'delivered') AS last_success_at,
        max(d.attempted_at) FILTER (WHERE d.status IN ('failed', 'retrying', 'dead')) AS last_failure_at,
        count(*) FILTER (WHERE d.attempted_at >= ${since} AND d.status IN ('delivered', 'failed', 'retrying', 'dead'))::int AS attempts_24h,
        count(*) FILTER (WHERE d.attempted_at >= ${since} AND d.status = 'delivered')::int AS delivered_24h,
        count(*) FILTER (WHERE d.status IN ('pending', 'retrying'))::int AS pending_count
      FROM webhook_deliveries d
      WHERE d.endpoint_id = e.id
    ) agg ON true
    LEFT JOIN LATERAL (
      SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY l.latency_ms) AS median_latency_ms
      FROM (
        SELECT d.latency_ms FROM webhook_deliveries d
        WHERE d.endpoint_id = e.id AND d.attempted_at IS NOT NULL AND d.latency_ms IS NOT NULL
        ORDER BY d.seq DESC
        LIMIT ${HEALTH_LATENCY_WINDOW}
      ) l
    ) med ON true`);
  for (const r of result.rows as Array<Record<string, unknown>>) {
    const attempts = Number(r.attempts_24h ?? 0);
    out.set(r.endpoint_id as string, {
      last_success_at: iso(r.last_success_at),
      last_failure_at: iso(r.last_failure_at),
      success_rate_24h: attempts === 0 ? null : Number(r.delivered_24h) / attempts,
      attempts_24h: attempts,
      median_latency_ms: r.median_latency_ms === null || r.median_latency_ms === undefined ? null : Math.round(Number(r.median_latency_ms)),
      pending_count: Number(r.pending_count ?? 0),
    });
  }
  for (const id of endpointIds) if (!out.has(id)) out.set(id, { ...EMPTY });
  return out;
}

export { EMPTY as EMPTY_HEALTH };
