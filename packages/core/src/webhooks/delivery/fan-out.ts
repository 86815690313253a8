import { and, channelMembers, eq, events, identities, inArray, isNotNull, isNull, lte, sql, webhookBodies, webhookDeliveries, webhookEndpoints, type Executor } from '@teamchat/db';
import type { Deps } from '../../context';
import { newId } from '../../ids';
import { eventReachesEndpoint, renderEventBody, type EventRow, type PayloadMode } from '../../events';

/**
 * Fan-out of one event (issue 11): one delivery row per matching enabled endpoint (events
 * filter, channels filter, DM rule 2), the body rendered once per payload mode and stored, and
 * the event marked relayed, all in one transaction. An event already relayed fans out nothing
 * (a relay that runs twice never doubles a delivery), and the unique (endpoint, event) index
 * on first attempts guards the same. Events created before the endpoint's `enabled_at` (raised
 * while it was disabled, or before it existed) are never sent to it.
 * Returns the new rows, to be enqueued after commit.
 */
export async function fanOutEvent(deps: Pick<Deps, 'database'>, eventId: string): Promise<string[]> {
  return deps.database.db.transaction(async (tx) => {
    const [event] = await tx.select().from(events).where(and(eq(events.id, eventId), isNull(events.relayedAt))).for('update', { skipLocked: true });
    if (!event) return [];
    const ids = await fanOutInTx(tx, event);
    await tx.update(events).set({ relayedAt: sql`now()` }).where(eq(events.id, event.id));
    return ids;
  });
}

async function fanOutInTx(tx: Executor, event: EventRow): Promise<string[]> {
  const endpoints = await tx
    .select({ id: webhookEndpoints.id, payload: webhookEndpoints.payload, events: webhookEndpoints.events, allChannels: webhookEndpoints.allChannels, channelIds: webhookEndpoints.channelIds })
    .from(webhookEndpoints)
    .where(and(
      eq(webhookEndpoints.accountId, event.accountId),
      eq(webhookEndpoints.enabled, true),
      isNull(webhookEndpoints.deletedAt),
      isNotNull(webhookEndpoints.enabledAt),
      lte(webhookEndpoints.enabledAt, event.createdAt),
    ));
  const matching = endpoints.filter((e) => eventReachesEndpoint(event, { events: e.events, channels: e.allChannels ? 'all' : e.channelIds }));
  if (matching.length === 0) return [];

  const readers = await textReaders(tx, event, matching.filter((e) => e.payload === 'text').map((e) => e.id));
  const modeOf = (e: { id: string; payload: string }): PayloadMode => (e.payload === 'text' && readers.has(e.id) ? 'text' : 'pointers');
  const bodyIds = new Map<PayloadMode, string>();
  for (const mode of new Set(matching.map(modeOf))) bodyIds.set(mode, await storeBody(tx, event, mode));

  const rows = matching.map((e) => {
    const id = newId('delivery');
    return {
      id, chainId: id, attempt: 1, status: 'pending', kind: 'event',
      accountId: event.accountId, endpointId: e.id, eventId: event.id, eventType: event.type,
      bodyId: bodyIds.get(modeOf(e))!, eventCreatedAt: event.createdAt,
    };
  });
  const inserted = await tx
    .insert(webhookDeliveries)
    .values(rows)
    .onConflictDoNothing({ target: [webhookDeliveries.endpointId, webhookDeliveries.eventId], where: sql`kind = 'event' AND attempt = 1` })
    .returning({ id: webhookDeliveries.id });
  return inserted.map((r) => r.id);
}

/**
 * Of the given text-mode endpoints, those whose creator can read the event's channel (their
 * person identity is a member of it, DMs included), checked when the event fans out. A webhook
 * never shows more than the person who set it up could read: the others get the pointers body.
 */
async function textReaders(tx: Executor, event: EventRow, endpointIds: string[]): Promise<Set<string>> {
  if (endpointIds.length === 0 || !event.channelId) return new Set();
  const rows = await tx
    .select({ id: webhookEndpoints.id })
    .from(webhookEndpoints)
    .innerJoin(identities, and(eq(identities.accountId, webhookEndpoints.accountId), eq(identities.userId, webhookEndpoints.createdByUserId), eq(identities.kind, 'person')))
    .innerJoin(channelMembers, and(eq(channelMembers.channelId, event.channelId), eq(channelMembers.identityId, identities.id)))
    .where(inArray(webhookEndpoints.id, endpointIds));
  return new Set(rows.map((r) => r.id));
}

/** The body of (event, mode), rendered once: an existing one is kept byte for byte. */
async function storeBody(tx: Executor, event: EventRow, mode: PayloadMode): Promise<string> {
  const [created] = await tx
    .insert(webhookBodies)
    .values({ id: newId('webhookBody'), accountId: event.accountId, eventId: event.id, eventType: event.type, mode, body: renderEventBody(event, mode) })
    .onConflictDoNothing({ target: [webhookBodies.eventId, webhookBodies.mode] })
    .returning({ id: webhookBodies.id });
  if (created) return created.id;
  const [existing] = await tx.select({ id: webhookBodies.id }).from(webhookBodies).where(and(eq(webhookBodies.eventId, event.id), eq(webhookBodies.mode, mode)));
  return existing.id;
}

/** Unrelayed events in seq order (the relay's scan); `accountIds` narrows it (tests sharing one database). */
export async function unrelayedEventIds(db: Executor, limit: number, accountIds?: readonly string[]): Promise<string[]> {
  const rows = await db
    .select({ id: events.id })
    .from(events)
    .where(and(isNull(events.relayedAt), accountIds ? inArray(events.accountId, [...accountIds, '']) : undefined))
    .orderBy(events.seq)
    .limit(limit);
  return rows.map((r) => r.id);
}
