import { sql, type Executor } from '@teamchat/db';
import type { DeliveryRow } from './rows';

/** One entry of GET .../webhooks/{endpointId}/deliveries (docs/webhooks.md lists the fields). */
export interface DeliveryView {
  id: string;
  event_id: string;
  event_type: string;
  kind: string;
  attempt: number;
  status: string;
  next_retry_at: string | null;
  response_status: number | null;
  latency_ms: number | null;
  error: string | null;
  created_at: string;
  attempted_at: string | null;
}

export function toDeliveryView(r: DeliveryRow): DeliveryView {
  return {
    id: r.id,
    event_id: r.eventId,
    event_type: r.eventType,
    kind: r.kind,
    attempt: r.attempt,
    status: r.status,
    next_retry_at: r.nextRetryAt?.toISOString() ?? null,
    response_status: r.responseStatus,
    latency_ms: r.latencyMs,
    error: r.error,
    created_at: r.createdAt.toISOString(),
    attempted_at: r.attemptedAt?.toISOString() ?? null,
  };
}

/**
 * Retention (spec: delivery log kept 30 days): deletes closed attempts older than `before`,
 * then bodies no attempt points to any more, in batches. Open rows are never purged.
 */
export async function purgeDeliveryLog(db: Executor, before: Date, batch = 5000): Promise<number> {
  const deleted = await db.execute(sql`
    DELETE FROM webhook_deliveries WHERE id IN (
      SELECT id FROM webhook_deliveries
       WHERE created_at < ${before} AND status NOT IN ('pending', 'retrying')
       LIMIT ${batch})`);
  await db.execute(sql`
    DELETE FROM webhook_bodies b WHERE b.id IN (
      SELECT b2.id FROM webhook_bodies b2
       WHERE b2.created_at < ${before}
         AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.body_id = b2.id)
       LIMIT ${batch})`);
  return deleted.rowCount ?? 0;
}
