import { and, channelMembers, eq, events, identities, inArray, isNull, runStatement, webhookEndpoints, type Executor } from '@teamchat/db';
import type { Deps } from '../../context';
import { newId } from '../../ids';
import { eventReachesEndpoint, renderEventBody, type EventRow, type PayloadMode } from '../../events';
import { FANOUT_READ, FANOUT_WRITE, MARK_RELAYED, UNRELAYED } from './statements';

/**
 * Fan-out of one event (issue 11): one delivery row per matching enabled endpoint (events
 * filter, channels filter, DM rule 2), the body rendered once per payload mode and stored, and
 * the event marked relayed, all at once. An event already relayed fans out nothing (a relay
 * that runs twice never doubles a delivery), and the unique (endpoint, event) index on first
 * attempts guards the same. Events created before the endpoint's `enabled_at` (raised while it
 * was disabled, or before it existed) are never sent to it.
 *
 * Two round trips (statements.ts): one read (the event and its account's endpoints), then one
 * write statement that marks the event relayed and, only if this call did, inserts the bodies
 * and deliveries: atomic on its own, so no transaction. A concurrent fan-out of the same event
 * waits on the event's row lock, then finds it relayed and writes nothing.
 * Returns the new rows, to be enqueued after commit.
 */
export async function fanOutEvent(deps: Pick<Deps, 'database'>, eventId: string): Promise<string[]> {
  const db = deps.database.db;
  const [r] = await runStatement(db, FANOUT_READ, [eventId]);
  if (!r) return [];
  const event: EventRow = {
    id: r.id, seq: Number(r.seq), accountId: r.account_id, type: r.type, channelId: r.channel_id, data: r.data, createdAt: r.created_at, relayedAt: r.relayed_at,
  };
  const matching = r.endpoints.filter((e) => eventReachesEndpoint(event, { events: e.events, channels: e.all_channels ? 'all' : e.channel_ids }));
  if (matching.length === 0) {
    await runStatement(db, MARK_RELAYED, [event.id]);
    return [];
  }
  const readers = await textReaders(db, event, matching.filter((e) => e.payload === 'text').map((e) => e.id));
  const modeOf = (e: { id: string; payload: string }): PayloadMode => (e.payload === 'text' && readers.has(e.id) ? 'text' : 'pointers');
  const bodies = [...new Set(matching.map(modeOf))].map((mode) => ({ id: newId('webhookBody'), mode, body: renderEventBody(event, mode) }));
  const bodyOf = new Map(bodies.map((b) => [b.mode, b.id]));
  const rows = matching.map((e) => ({ id: newId('delivery'), endpointId: e.id, bodyId: bodyOf.get(modeOf(e))! }));
  const [written] = await runStatement(db, FANOUT_WRITE, [
    event.id, event.accountId, event.type, event.createdAt,
    bodies.map((b) => b.id), bodies.map((b) => b.mode), bodies.map((b) => b.body),
    rows.map((d) => d.id), rows.map((d) => d.endpointId), rows.map((d) => d.bodyId),
  ]);
  return written.ids;
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

/** Unrelayed events in seq order (the relay's scan); `accountIds` narrows it (tests sharing one database). */
export async function unrelayedEventIds(db: Executor, limit: number, accountIds?: readonly string[]): Promise<string[]> {
  if (!accountIds) return (await runStatement(db, UNRELAYED, [limit])).map((r) => r.id);
  const rows = await db
    .select({ id: events.id })
    .from(events)
    .where(and(isNull(events.relayedAt), inArray(events.accountId, [...accountIds, ''])))
    .orderBy(events.seq)
    .limit(limit);
  return rows.map((r) => r.id);
}
