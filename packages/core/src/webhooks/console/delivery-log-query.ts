import { and, desc, eq, gte, inArray, lt, lte, webhookBodies, webhookDeliveries, type Executor } from '@teamchat/db';
import { errors } from '../../errors';
import type { Actor } from '../../principal';
import { mayReadBody } from '../endpoints/text-access';
import type { DeliveryRow } from '../delivery/rows';
import { toDeliveryView, type DeliveryView } from '../delivery/log';

/** Filters of the delivery log (docs/web.md, "Delivery log"); each is optional and they combine. */
export interface DeliveryLogFilter {
  statuses?: string[];
  eventType?: string;
  eventId?: string;
  since?: Date;
  until?: Date;
}

/** The endpoint's delivery log, newest first, keyset-paged on seq, narrowed by the filters. */
export async function listDeliveryLog(
  db: Executor,
  endpointId: string,
  filter: DeliveryLogFilter,
  page: { limit: number; after: number | null },
): Promise<DeliveryRow[]> {
  const d = webhookDeliveries;
  return db
    .select()
    .from(d)
    .where(
      and(
        eq(d.endpointId, endpointId),
        page.after === null ? undefined : lt(d.seq, page.after),
        filter.statuses?.length ? inArray(d.status, filter.statuses) : undefined,
        filter.eventType ? eq(d.eventType, filter.eventType) : undefined,
        filter.eventId ? eq(d.eventId, filter.eventId) : undefined,
        filter.since ? gte(d.createdAt, filter.since) : undefined,
        filter.until ? lte(d.createdAt, filter.until) : undefined,
      ),
    )
    .orderBy(desc(d.seq))
    .limit(page.limit + 1);
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
  input: { accountId: string; endpointId: string; deliveryId: string; authorizationSet: boolean; actor: Actor },
): Promise<DeliveryDetailView> {
  const [row] = await db
    .select({ delivery: webhookDeliveries, body: webhookBodies.body })
    .from(webhookDeliveries)
    .innerJoin(webhookBodies, eq(webhookBodies.id, webhookDeliveries.bodyId))
    .where(and(eq(webhookDeliveries.id, input.deliveryId), eq(webhookDeliveries.endpointId, input.endpointId), eq(webhookDeliveries.accountId, input.accountId)));
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
