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

/** Start of the success rate's window: the hour 23 hours before the current one (the 24 h chart's first bucket). */
export function healthRateSince(now: Date): Date {
  return new Date(Math.floor(now.getTime() / HOUR_MS) * HOUR_MS - (HEALTH_RATE_HOURS - 1) * HOUR_MS);
}
const HOUR_MS = 3_600_000;
const HEALTH_RATE_HOURS = HEALTH_RATE_WINDOW_MS / HOUR_MS;

/**
 * Health of endpoints, from the rollups the delivery log's triggers keep (docs/webhooks.md
 * "Health and stats rollups"), never from a scan of the log: per endpoint one row
 * (`webhook_endpoint_health`), at most 24 hourly rows (`webhook_endpoint_hours`), and the
 * deltas not yet folded into them. An attempt is a log row with `attempted_at`: `delivered` is a
 * success; `failed`, `retrying` and `dead` are failures. One round trip for a whole page.
 */
export async function endpointHealth(db: Executor, endpointIds: readonly string[], now: Date): Promise<Map<string, EndpointHealth>> {
  const out = new Map<string, EndpointHealth>();
  if (endpointIds.length === 0) return out;
  const since = healthRateSince(now);
  const result = await db.execute(sql`
    SELECT e.id AS endpoint_id,
           GREATEST(h.last_success_at, d.last_success_at) AS last_success_at,
           GREATEST(h.last_failure_at, d.last_failure_at) AS last_failure_at,
           COALESCE(h.open_count, 0) + COALESCE(d.open_count, 0) AS pending_count,
           r.attempts_24h, r.delivered_24h, med.median_latency_ms
    FROM unnest(ARRAY[${sql.join(endpointIds.map((id) => sql`${id}`), sql`, `)}]::text[]) AS e(id)
    LEFT JOIN webhook_endpoint_health h ON h.endpoint_id = e.id
    LEFT JOIN LATERAL (
      SELECT max(x.last_success_at) AS last_success_at, max(x.last_failure_at) AS last_failure_at, sum(x.open_count) AS open_count
        FROM webhook_health_deltas x WHERE x.endpoint_id = e.id
    ) d ON true
    LEFT JOIN LATERAL (
      SELECT COALESCE(sum(y.delivered + y.failed + y.dead), 0)::int AS attempts_24h, COALESCE(sum(y.delivered), 0)::int AS delivered_24h
        FROM (SELECT delivered, failed, dead FROM webhook_endpoint_hours WHERE endpoint_id = e.id AND hour >= ${since}
              UNION ALL
              SELECT delivered, failed, dead FROM webhook_health_deltas WHERE endpoint_id = e.id AND hour >= ${since}) y
    ) r ON true
    LEFT JOIN LATERAL (
      SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY l.ms) AS median_latency_ms
        FROM (SELECT (p->>1)::int AS ms
                FROM (SELECT jsonb_array_elements(h.recent) AS p
                      UNION ALL
                      SELECT jsonb_array_elements(x.recent) FROM webhook_health_deltas x WHERE x.endpoint_id = e.id) z
               ORDER BY (p->>0)::bigint DESC
               LIMIT ${HEALTH_LATENCY_WINDOW}) l
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
