import { sql, type Executor } from '@teamchat/db';

/**
 * An endpoint's delivery statistics for the dashboard's charts (docs/web.md, "Endpoint stats"):
 * attempts per hour by outcome and latency percentiles, computed by PostgreSQL (GROUP BY and
 * percentile_cont over the window), never by loading rows into the process. An attempt is a
 * delivery row with `attempted_at` (tests and replays included), as for `health`.
 */
export const STATS_WINDOWS = { '24h': 24, '7d': 7 * 24 } as const;
export type StatsWindow = keyof typeof STATS_WINDOWS;

export interface StatsBucket {
  start: string;
  delivered: number;
  failed: number;
  dead: number;
  other: number;
}

export interface EndpointStats {
  window: StatsWindow;
  bucket: 'hour';
  from: string;
  to: string;
  buckets: StatsBucket[];
  totals: { attempts: number; delivered: number; failed: number; dead: number };
  latency_ms: { p50: number | null; p99: number | null };
}

const HOUR_MS = 3_600_000;

interface BucketRow {
  hour: Date | string;
  delivered: string;
  failed: string;
  dead: string;
  other: string;
  [k: string]: unknown;
}
interface LatencyRow {
  p50: number | null;
  p99: number | null;
  [k: string]: unknown;
}

export async function endpointStats(db: Executor, input: { endpointId: string; window: StatsWindow; now: Date }): Promise<EndpointStats> {
  const hours = STATS_WINDOWS[input.window];
  const to = new Date(Math.floor(input.now.getTime() / HOUR_MS) * HOUR_MS + HOUR_MS);
  const from = new Date(to.getTime() - hours * HOUR_MS);
  const [buckets, latency] = await Promise.all([
    db.execute<BucketRow>(sql`
      SELECT date_trunc('hour', attempted_at) AS hour,
             count(*) FILTER (WHERE status = 'delivered') AS delivered,
             count(*) FILTER (WHERE status IN ('failed', 'retrying')) AS failed,
             count(*) FILTER (WHERE status = 'dead') AS dead,
             count(*) FILTER (WHERE status NOT IN ('delivered', 'failed', 'retrying', 'dead')) AS other
        FROM webhook_deliveries
       WHERE endpoint_id = ${input.endpointId} AND attempted_at >= ${from} AND attempted_at < ${to}
       GROUP BY 1`),
    db.execute<LatencyRow>(sql`
      SELECT round(percentile_cont(0.5) WITHIN GROUP (ORDER BY latency_ms))::int AS p50,
             round(percentile_cont(0.99) WITHIN GROUP (ORDER BY latency_ms))::int AS p99
        FROM webhook_deliveries
       WHERE endpoint_id = ${input.endpointId} AND attempted_at >= ${from} AND attempted_at < ${to} AND latency_ms IS NOT NULL`),
  ]);
  const byHour = new Map(buckets.rows.map((r) => [new Date(r.hour).getTime(), r]));
  const out: StatsBucket[] = [];
  const totals = { attempts: 0, delivered: 0, failed: 0, dead: 0 };
  for (let t = from.getTime(); t < to.getTime(); t += HOUR_MS) {
    const r = byHour.get(t);
    const b = { start: new Date(t).toISOString(), delivered: Number(r?.delivered ?? 0), failed: Number(r?.failed ?? 0), dead: Number(r?.dead ?? 0), other: Number(r?.other ?? 0) };
    totals.attempts += b.delivered + b.failed + b.dead + b.other;
    totals.delivered += b.delivered;
    totals.failed += b.failed;
    totals.dead += b.dead;
    out.push(b);
  }
  const l = latency.rows[0];
  return {
    window: input.window, bucket: 'hour', from: from.toISOString(), to: to.toISOString(), buckets: out, totals,
    latency_ms: { p50: l?.p50 ?? null, p99: l?.p99 ?? null },
  };
}
