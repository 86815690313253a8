import { sql, type Executor } from '@teamchat/db';

/**
 * An endpoint's delivery statistics for the dashboard's charts (docs/web.md, "Endpoint stats"):
 * attempts per hour by outcome and latency percentiles, read from the hourly rollups the delivery
 * log's triggers keep (docs/webhooks.md "Health and stats rollups"): at most 168 rows and the
 * deltas not yet folded, whatever the log's size. An attempt is a delivery row with
 * `attempted_at` (tests and replays included), as for `health`. The percentiles come from the
 * rollups' latency histogram (buckets 10 % wide): each is the middle of its bucket, within 5 %
 * (or 1 ms) of the exact value.
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
interface HistRow {
  b: string;
  n: string;
  [k: string]: unknown;
}

/** Latency histogram bucket bounds (webhook_latency_bucket in the migration): bucket b ≥ 1 holds [1.1^(b-1), 1.1^b) ms. */
const BUCKET_BASE = 1.1;
/** The value a bucket stands for: its geometric middle (0 for the sub-millisecond bucket). */
export function bucketLatency(bucket: number): number {
  return bucket <= 0 ? 0 : Math.round(BUCKET_BASE ** (bucket - 0.5));
}

/** The p-quantile (0..1) of a histogram (bucket → count): the first bucket whose running count reaches p of the total. */
export function histogramQuantile(hist: ReadonlyArray<{ bucket: number; count: number }>, p: number): number | null {
  const sorted = [...hist].filter((h) => h.count > 0).sort((a, b) => a.bucket - b.bucket);
  const total = sorted.reduce((s, h) => s + h.count, 0);
  if (total === 0) return null;
  const rank = Math.max(1, Math.ceil(p * total));
  let seen = 0;
  for (const h of sorted) {
    seen += h.count;
    if (seen >= rank) return bucketLatency(h.bucket);
  }
  return bucketLatency(sorted[sorted.length - 1].bucket);
}

export async function endpointStats(db: Executor, input: { endpointId: string; window: StatsWindow; now: Date }): Promise<EndpointStats> {
  const hours = STATS_WINDOWS[input.window];
  const to = new Date(Math.floor(input.now.getTime() / HOUR_MS) * HOUR_MS + HOUR_MS);
  const from = new Date(to.getTime() - hours * HOUR_MS);
  const rollups = sql`(SELECT hour, delivered, failed, dead, other, hist FROM webhook_endpoint_hours
                        WHERE endpoint_id = ${input.endpointId} AND hour >= ${from} AND hour < ${to}
                       UNION ALL
                       SELECT hour, delivered, failed, dead, other, hist FROM webhook_health_deltas
                        WHERE endpoint_id = ${input.endpointId} AND hour >= ${from} AND hour < ${to})`;
  const [buckets, hist] = await Promise.all([
    db.execute<BucketRow>(sql`
      SELECT hour, sum(delivered) AS delivered, sum(failed) AS failed, sum(dead) AS dead, sum(other) AS other
        FROM ${rollups} r GROUP BY hour`),
    db.execute<HistRow>(sql`
      SELECT h.key AS b, sum(h.value::bigint) AS n FROM ${rollups} r, jsonb_each_text(r.hist) h GROUP BY h.key`),
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
  const h = hist.rows.map((r) => ({ bucket: Number(r.b), count: Number(r.n) }));
  return {
    window: input.window, bucket: 'hour', from: from.toISOString(), to: to.toISOString(), buckets: out, totals,
    latency_ms: { p50: histogramQuantile(h, 0.5), p99: histogramQuantile(h, 0.99) },
  };
}
