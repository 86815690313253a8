import { and, channelMembers, eq, events, gt, identities, inArray, isNull, runStatement, webhookEndpoints, type Executor } from '@teamchat/db';
import { FANOUT_READ, FANOUT_WRITE, FANOUT_WRITE_MIRRORED, UNRELAYED, UNRELAYED_READ, type FanOutRead } from './statements';
import type { HeldClaim } from './claims-ahead';
import { claimedContexts } from './store';
import { eventReachesEndpoint, newId, renderEventBody, type Deps, type EventRow, type PayloadMode } from '@teamchat/core';

/** A delivery row the fan-out wrote (`pending`, attempt 1), with its stored body: its first attempt needs nothing more. */
export interface FannedOutDelivery {
  id: string;
  accountId: string;
  endpointId: string;
  eventId: string;
  eventType: string;
  bodyId: string;
  body: string;
  eventCreatedAt: Date;
}

/**
 * Fan-out of a batch of events (docs/webhooks.md "The delivery engine"): one delivery row per matching enabled endpoint
 * (events filter, channels filter, DM rule 2), each event's body rendered once per payload mode
 * and stored, and the events marked relayed, all at once. An event already relayed fans out
 * nothing (a relay that runs twice never doubles a delivery), and the unique (endpoint, event)
 * index on first attempts guards the same. Events created before the endpoint's `enabled_at`
 * (raised while it was disabled, or before it existed) are never sent to it.
 *
 * Two round trips for the whole batch (statements.ts): one read (the events and their accounts'
 * endpoints), then one write statement that marks the events relayed and, only for those it
 * marked, inserts their bodies and deliveries: atomic on its own, so no transaction. An event
 * another fan-out holds at that moment is skipped (that one writes it); one it already wrote is
 * found relayed. Returns the new rows, to be attempted or enqueued after commit.
 */
export async function fanOutEvents(deps: Pick<Deps, 'database'>, eventIds: readonly string[], read?: readonly FanOutRead[]): Promise<FannedOutDelivery[]> {
  return (await writeFanOut(deps, await planFanOut(deps, eventIds, read))).rows;
}

/** A batch's fan-out, read and rendered, not yet written: the events still unrelayed, their bodies and rows. */
export interface FanOutPlan {
  eventIds: string[];
  bodies: Array<{ id: string; accountId: string; eventId: string; type: string; mode: PayloadMode; body: string }>;
  rows: FannedOutDelivery[];
  /** an event of the batch belongs to an account with an enabled mirror: the write queues mirror lines too */
  mirrored: boolean;
}

/**
 * The read side of fanOutEvents (one statement, or the relay's scan that already read the events
 * the same way: `read`), and the bodies rendered.
 */
export async function planFanOut(deps: Pick<Deps, 'database'>, eventIds: readonly string[], read?: readonly FanOutRead[]): Promise<FanOutPlan> {
  const plan: FanOutPlan = { eventIds: [], bodies: [], rows: [], mirrored: false };
  if (eventIds.length === 0) return plan;
  const db = deps.database.db;
  const found = read ?? await runStatement(db, FANOUT_READ, [eventIds]);
  for (const r of found) {
    plan.eventIds.push(r.id);
    if (r.mirrored) plan.mirrored = true;
    const event: EventRow = {
      id: r.id, seq: Number(r.seq), accountId: r.account_id, type: r.type, channelId: r.channel_id, data: r.data, createdAt: r.created_at, relayedAt: r.relayed_at,
    };
    const matching = r.endpoints.filter((e) => eventReachesEndpoint(event, { events: e.events, channels: e.all_channels ? 'all' : e.channel_ids }));
    if (matching.length === 0) continue;
    const readers = await textReaders(db, event, matching.filter((e) => e.payload === 'text').map((e) => e.id));
    const modeOf = (e: { id: string; payload: string }): PayloadMode => (e.payload === 'text' && readers.has(e.id) ? 'text' : 'pointers');
    const mine = [...new Set(matching.map(modeOf))].map((mode) => ({ id: newId('webhookBody'), accountId: event.accountId, eventId: event.id, type: event.type, mode, body: renderEventBody(event, mode) }));
    plan.bodies.push(...mine);
    for (const e of matching) {
      const b = mine.find((x) => x.mode === modeOf(e))!;
      plan.rows.push({ id: newId('delivery'), accountId: event.accountId, endpointId: e.id, eventId: event.id, eventType: event.type, bodyId: b.id, body: b.body, eventCreatedAt: event.createdAt });
    }
  }
  return plan;
}

/** Rows of a plan to claim in its write: their ids, and the claim (until when). */
export interface ClaimAtWrite {
  ids: ReadonlySet<string>;
  until: Date;
}

/** What a fan-out's write wrote: its rows (open), and those it claimed with each claim's read. */
export interface FanOutWritten {
  rows: FannedOutDelivery[];
  /** the rows claimed at the write (ClaimAtWrite), by id: as the write read them, its claim, and when (ClaimsAhead holds them as such) */
  claimed: Map<string, HeldClaim>;
}

/**
 * The write side of fanOutEvents (one statement). Rows of `claim` are written claimed and read
 * back as a claim reads them (the row, its endpoint and account as they are now, its body), so
 * their attempts need no claim of their own; the others are written unclaimed. A claim's read
 * is dated from before the statement, which reads the endpoints at its start.
 */
export async function writeFanOut(deps: Pick<Deps, 'database'>, plan: FanOutPlan, claim?: ClaimAtWrite): Promise<FanOutWritten> {
  if (plan.eventIds.length === 0) return { rows: [], claimed: new Map() };
  const { bodies, rows } = plan;
  const at = Date.now();
  const [written] = await runStatement(deps.database.db, plan.mirrored ? FANOUT_WRITE_MIRRORED : FANOUT_WRITE, [
    plan.eventIds,
    bodies.map((b) => b.id), bodies.map((b) => b.accountId), bodies.map((b) => b.eventId), bodies.map((b) => b.type), bodies.map((b) => b.mode), bodies.map((b) => b.body),
    rows.map((d) => d.id), rows.map((d) => d.accountId), rows.map((d) => d.endpointId), rows.map((d) => d.eventId), rows.map((d) => d.eventType), rows.map((d) => d.bodyId), rows.map((d) => d.eventCreatedAt),
    claim && claim.ids.size > 0 ? claim.until : null, claim ? [...claim.ids] : [],
  ]);
  const inserted = new Set(written.ids);
  const claimed = new Map<string, HeldClaim>();
  if (claim) for (const [id, ctx] of claimedContexts(written.claimed)) claimed.set(id, { ctx, claim: claim.until, at });
  return { rows: rows.filter((d) => inserted.has(d.id)), claimed };
}

/** Fan-out of one event (fanOutEvents of one): the new delivery rows' ids. */
export async function fanOutEvent(deps: Pick<Deps, 'database'>, eventId: string): Promise<string[]> {
  return (await fanOutEvents(deps, [eventId])).map((d) => d.id);
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

/**
 * Unrelayed events in seq order with what their fan-out reads (UNRELAYED_READ): the scan of a
 * relay that is caught up, which fans them out itself with no second read.
 */
export async function unrelayedEventsRead(db: Executor, limit: number, accountIds?: readonly string[]): Promise<FanOutRead[]> {
  return runStatement(db, UNRELAYED_READ, [limit, accountIds ?? null]);
}

/**
 * Unrelayed events in seq order (the relay's scan), after seq `after` when given (the relay's
 * cursor; else from the start); `accountIds` narrows it (tests sharing one database).
 */
export async function unrelayedEvents(db: Executor, limit: number, options: { accountIds?: readonly string[]; after?: number } = {}): Promise<Array<{ id: string; seq: number }>> {
  const after = options.after ?? -1;
  if (!options.accountIds) return (await runStatement(db, UNRELAYED, [limit, after])).map((r) => ({ id: r.id, seq: Number(r.seq) }));
  return db
    .select({ id: events.id, seq: events.seq })
    .from(events)
    .where(and(isNull(events.relayedAt), gt(events.seq, after), inArray(events.accountId, [...options.accountIds, ''])))
    .orderBy(events.seq)
    .limit(limit);
}
