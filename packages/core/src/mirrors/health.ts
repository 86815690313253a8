import { sql, type Executor } from '@teamchat/db';

/** A mirror's health as the API shows it (docs/mirrors.md "Health"). */
export interface MirrorHealth {
  /** the latest send answered 2xx */
  last_success_at: string | null;
  /** the latest send that failed */
  last_failure_at: string | null;
  /** delivered ÷ attempted over the last 24 h, 0..1; null without attempts */
  success_rate_24h: number | null;
  attempts_24h: number;
  /** lines waiting to be sent plus sends not yet finished (`pending`, `retrying`) */
  pending_count: number;
  /** no message is sent before this (pacing, or the receiver's Retry-After); null when free */
  paused_until: string | null;
}

const DAY_MS = 24 * 60 * 60 * 1000;
const iso = (v: unknown): string | null => (v === null || v === undefined ? null : new Date(v as string | Date).toISOString());

/** Health of mirrors, from their delivery log and queue: one round trip for a page of mirrors. */
export async function mirrorHealth(db: Executor, mirrorIds: readonly string[], now: Date): Promise<Map<string, MirrorHealth>> {
  const out = new Map<string, MirrorHealth>();
  if (mirrorIds.length === 0) return out;
  const since = new Date(now.getTime() - DAY_MS);
  const result = await db.execute(sql`
    SELECT m.id, m.next_send_at, agg.last_success_at, agg.last_failure_at, agg.attempts_24h, agg.delivered_24h, agg.open_count,
           (SELECT count(*)::int FROM mirror_lines l WHERE l.mirror_id = m.id) AS line_count
      FROM mirrors m
      LEFT JOIN LATERAL (
        SELECT max(d.attempted_at) FILTER (WHERE d.status = 'delivered') AS last_success_at,
               max(d.attempted_at) FILTER (WHERE d.status IN ('failed', 'retrying', 'dead') AND d.attempted_at IS NOT NULL) AS last_failure_at,
               count(*) FILTER (WHERE d.attempted_at >= ${since} AND d.status IN ('delivered', 'failed', 'dead'))::int AS attempts_24h,
               count(*) FILTER (WHERE d.attempted_at >= ${since} AND d.status = 'delivered')::int AS delivered_24h,
               count(*) FILTER (WHERE d.status IN ('pending', 'retrying'))::int AS open_count
          FROM mirror_deliveries d WHERE d.mirror_id = m.id
      ) agg ON true
     WHERE m.id IN (${sql.join(mirrorIds.map((id) => sql`${id}`), sql`, `)})`);
  for (const r of result.rows as Array<Record<string, unknown>>) {
    const attempts = Number(r.attempts_24h ?? 0);
    const paused = r.next_send_at ? new Date(r.next_send_at as string) : null;
    out.set(r.id as string, {
      last_success_at: iso(r.last_success_at),
      last_failure_at: iso(r.last_failure_at),
      success_rate_24h: attempts === 0 ? null : Number(r.delivered_24h) / attempts,
      attempts_24h: attempts,
      pending_count: Number(r.open_count ?? 0) + Number(r.line_count ?? 0),
      paused_until: paused && paused > now ? paused.toISOString() : null,
    });
  }
  return out;
}
