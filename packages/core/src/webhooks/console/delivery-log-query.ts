import { and, eq, gte, sql, webhookBodies, webhookDeliveries, type Executor, type SQL } from '@teamchat/db';
import { errors } from '../../errors';
import type { Actor } from '../../principal';
import { mayReadBody } from '../endpoints/text-access';
import type { DeliveryRow } from '../delivery/rows';
import { deliveryLogFloor, toDeliveryView, type DeliveryView } from '../delivery/log';

/** Filters of the delivery log (docs/web.md, "Delivery log"); each is optional and they combine. */
export interface DeliveryLogFilter {
  statuses?: string[];
  eventType?: string;
  eventId?: string;
  since?: Date;
  until?: Date;
}

type RawDeliveryRow = Record<string, unknown>;
const date = (v: unknown): Date => (v instanceof Date ? v : new Date(v as string));
const dateOrNull = (v: unknown): Date | null => (v === null || v === undefined ? null : date(v));

function toDeliveryRow(r: RawDeliveryRow): DeliveryRow {
  return {
    id: r.id as string, seq: Number(r.seq), accountId: r.account_id as string, endpointId: r.endpoint_id as string,
    eventId: r.event_id as string, eventType: r.event_type as string, bodyId: r.body_id as string, kind: r.kind as string,
    chainId: r.chain_id as string, attempt: Number(r.attempt), status: r.status as string,
    nextRetryAt: dateOrNull(r.next_retry_at), claimedUntil: dateOrNull(r.claimed_until),
    responseStatus: r.response_status === null ? null : Number(r.response_status),
    latencyMs: r.latency_ms === null ? null : Number(r.latency_ms), error: (r.error as string | null) ?? null,
    eventCreatedAt: date(r.event_created_at), createdAt: date(r.created_at), attemptedAt: dateOrNull(r.attempted_at),
  };
}

/**
 * The endpoint's delivery log, newest first, keyset-paged on seq, narrowed by the filters. Each
 * filter has its index path on the partitioned log (docs/performance.md "The delivery log at
 * volume"): one status walks (endpoint, status, seq) newest first; several statuses walk it once
 * per status and merge (UNION ALL of ordered, limited scans: an `IN` list on the index is not in
 * seq order and would read every matching row); an event type walks (endpoint, event type,
 * seq); an event id finds its few rows through its bodies (body_id); a time range prunes the
 * weekly partitions.
 */
export async function listDeliveryLog(
  db: Executor,
  endpointId: string,
  filter: DeliveryLogFilter,
  page: { limit: number; after: number | null },
  now: Date = new Date(),
): Promise<DeliveryRow[]> {
  const result = await db.execute<RawDeliveryRow>(deliveryLogStatement(endpointId, filter, page, now));
  return result.rows.map(toDeliveryRow);
}

/** The statement listDeliveryLog runs (the scale bench EXPLAINs it). */
export function deliveryLogStatement(endpointId: string, filter: DeliveryLogFilter, page: { limit: number; after: number | null }, now: Date): SQL {
  const n = page.limit + 1;
  // the log shows 30 days (deliveryLogFloor); the bound also prunes the weekly partitions
  const floor = deliveryLogFloor(now);
  const since = filter.since && filter.since > floor ? filter.since : floor;
  const where = (status: string | null) => sql.join([
    sql`endpoint_id = ${endpointId}`,
    status === null ? undefined : sql`status = ${status}`,
    page.after === null ? undefined : sql`seq < ${page.after}`,
    filter.eventType ? sql`event_type = ${filter.eventType}` : undefined,
    filter.eventId ? sql`event_id = ${filter.eventId} AND body_id IN (SELECT b.id FROM webhook_bodies b WHERE b.event_id = ${filter.eventId})` : undefined,
    sql`created_at >= ${since}`,
    filter.until ? sql`created_at <= ${filter.until}` : undefined,
  ].filter((x) => x !== undefined), sql` AND `);
  const statuses = [...new Set(filter.statuses ?? [])];
  return statuses.length <= 1
    ? sql`SELECT * FROM webhook_deliveries WHERE ${where(statuses[0] ?? null)} ORDER BY seq DESC LIMIT ${n}`
    : sql`SELECT * FROM (${sql.join(
      statuses.map((s) => sql`(SELECT * FROM webhook_deliveries WHERE ${where(s)} ORDER BY seq DESC LIMIT ${n})`),
      sql` UNION ALL `,
    )}) u ORDER BY seq DESC LIMIT ${n}`;
}

export interface DeliveryDetailView extends DeliveryView {
  /** `body` is null when withheld: a `text` body from a channel the caller cannot read (`body_withheld` says so). */
  request: { headers: Record<string, string>; body: string | null; body_withheld?: 'cannot_read_channel' };
}

/**
 * One attempt with the request as sent: the body exactly as stored (the bytes that were signed)
 * and the service's headers. The signature itself is computed at send time and not stored (it
 * would be a second copy of what the secret proves), so it is shown by its form; the custom
 * Authorization header is only ever shown masked.
 */
export async function getDeliveryDetail(
  db: Executor,
  input: { accountId: string; endpointId: string; deliveryId: string; authorizationSet: boolean; actor: Actor; now?: Date },
): Promise<DeliveryDetailView> {
  const [row] = await db
    .select({ delivery: webhookDeliveries, body: webhookBodies.body })
    .from(webhookDeliveries)
    .innerJoin(webhookBodies, eq(webhookBodies.id, webhookDeliveries.bodyId))
    .where(and(
      eq(webhookDeliveries.id, input.deliveryId), eq(webhookDeliveries.endpointId, input.endpointId), eq(webhookDeliveries.accountId, input.accountId),
      gte(webhookDeliveries.createdAt, deliveryLogFloor(input.now ?? new Date())),
    ));
  if (!row) throw errors.notFound('delivery');
  const d = row.delivery;
  const headers: Record<string, string> = {
    'Content-Type': 'application/json',
    'X-Service-Event': d.eventType,
    'X-Service-Delivery': d.id,
    'X-Service-Attempt': String(d.attempt),
    'X-Service-Signature': 't=<unix seconds of the attempt>,v1=<HMAC-SHA256 of "<t>.<body>" with each signing secret> (computed at send time, not stored)',
  };
  if (input.authorizationSet) headers.Authorization = 'Bearer ••••••••';
  // The same rule as a replay: nobody reads, through the delivery log, text they could not read themselves.
  if (!await mayReadBody(db, { bodyId: d.bodyId, actor: input.actor })) {
    return { ...toDeliveryView(d), request: { headers, body: null, body_withheld: 'cannot_read_channel' } };
  }
  return { ...toDeliveryView(d), request: { headers, body: row.body } };
}
