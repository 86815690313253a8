import {
  accounts, and, eq, inArray, sql, webhookBodies, webhookDeliveries, webhookEndpoints, type Executor,
} from '@teamchat/db';
import { newId } from '../../ids';

/**
 * The delivery log's rows and their transitions (spec: Delivery transitions). One row per
 * attempt; a row is created `pending` (first attempt) or `retrying` with `next_retry_at` (a
 * scheduled retry, or an attempt waiting for the seat's call units), and after its attempt it
 * becomes `delivered`, `failed` (a retry row was scheduled) or `dead` (no further attempt).
 */
export type DeliveryRow = typeof webhookDeliveries.$inferSelect;
export type EndpointRow = typeof webhookEndpoints.$inferSelect;
export type DeliveryStatus = 'pending' | 'delivered' | 'retrying' | 'failed' | 'dead';
export type DeliveryKind = 'event' | 'test' | 'replay';
export const OPEN_STATUSES: readonly DeliveryStatus[] = ['pending', 'retrying'];

export interface DeliveryContext {
  row: DeliveryRow;
  endpoint: EndpointRow;
  account: { id: string; plan: string; state: string };
  body: string;
}

/** The row with everything its attempt needs, in one query. */
export async function loadDeliveryContext(db: Executor, deliveryId: string): Promise<DeliveryContext | undefined> {
  const [r] = await db
    .select({ row: webhookDeliveries, endpoint: webhookEndpoints, account: { id: accounts.id, plan: accounts.plan, state: accounts.state }, body: webhookBodies.body })
    .from(webhookDeliveries)
    .innerJoin(webhookEndpoints, eq(webhookEndpoints.id, webhookDeliveries.endpointId))
    .innerJoin(accounts, eq(accounts.id, webhookDeliveries.accountId))
    .innerJoin(webhookBodies, eq(webhookBodies.id, webhookDeliveries.bodyId))
    .where(eq(webhookDeliveries.id, deliveryId));
  return r;
}

/**
 * Claims an open, due row for one attempt until `until`: no two workers attempt it at once. An
 * expired claim (its worker died) may be taken again: at-least-once.
 */
export async function claimDelivery(db: Executor, deliveryId: string, now: Date, until: Date): Promise<DeliveryRow | undefined> {
  const [row] = await db
    .update(webhookDeliveries)
    .set({ claimedUntil: until })
    .where(and(
      eq(webhookDeliveries.id, deliveryId),
      inArray(webhookDeliveries.status, [...OPEN_STATUSES]),
      sql`(${webhookDeliveries.nextRetryAt} IS NULL OR ${webhookDeliveries.nextRetryAt} <= ${now})`,
      sql`(${webhookDeliveries.claimedUntil} IS NULL OR ${webhookDeliveries.claimedUntil} < ${now})`,
    ))
    .returning();
  return row;
}

/** The fence every write after an attempt carries: this row, still open, still under our claim. */
function ours(deliveryId: string, claim: Date) {
  return and(eq(webhookDeliveries.id, deliveryId), eq(webhookDeliveries.claimedUntil, claim), inArray(webhookDeliveries.status, [...OPEN_STATUSES]));
}

/** Any status → `retrying` until the seat's units reset (spec: "seat's daily call units spent"). */
export async function deferForUnits(db: Executor, deliveryId: string, claim: Date, resetsAt: Date): Promise<boolean> {
  const rows = await db
    .update(webhookDeliveries)
    .set({ status: 'retrying', nextRetryAt: resetsAt, claimedUntil: null, error: 'waiting: the seat of the endpoint\'s creator has spent its call units for today' })
    .where(ours(deliveryId, claim))
    .returning({ id: webhookDeliveries.id });
  return rows.length === 1;
}

/** Writes the attempt's result and its new status; false when the claim was lost meanwhile. */
export async function closeAttempt(
  tx: Executor,
  input: { deliveryId: string; claim: Date; status: Exclude<DeliveryStatus, 'pending' | 'retrying'>; responseStatus: number | null; latencyMs: number | null; error: string | null; now: Date },
): Promise<boolean> {
  const rows = await tx
    .update(webhookDeliveries)
    .set({
      status: input.status,
      responseStatus: input.responseStatus,
      latencyMs: input.latencyMs,
      error: input.error,
      attemptedAt: input.now,
      claimedUntil: null,
      nextRetryAt: null,
    })
    .where(ours(input.deliveryId, input.claim))
    .returning({ id: webhookDeliveries.id });
  return rows.length === 1;
}

/** A row that never gets its attempt (its endpoint was disabled or deleted): `dead`, no further attempt. */
export async function closeWithoutAttempt(db: Executor, deliveryId: string, error: string, now: Date): Promise<boolean> {
  const rows = await db
    .update(webhookDeliveries)
    .set({ status: 'dead', error, nextRetryAt: null, claimedUntil: null, attemptedAt: null })
    .where(and(
      eq(webhookDeliveries.id, deliveryId),
      inArray(webhookDeliveries.status, [...OPEN_STATUSES]),
      sql`(${webhookDeliveries.claimedUntil} IS NULL OR ${webhookDeliveries.claimedUntil} < ${now})`,
    ))
    .returning({ id: webhookDeliveries.id });
  return rows.length === 1;
}

/** The next attempt of a chain, waiting as `retrying` until `at`. */
export async function insertRetry(tx: Executor, prev: DeliveryRow, at: Date): Promise<string> {
  const id = newId('delivery');
  await tx.insert(webhookDeliveries).values({
    id,
    accountId: prev.accountId,
    endpointId: prev.endpointId,
    eventId: prev.eventId,
    eventType: prev.eventType,
    bodyId: prev.bodyId,
    kind: prev.kind,
    chainId: prev.chainId,
    attempt: prev.attempt + 1,
    status: 'retrying',
    nextRetryAt: at,
    eventCreatedAt: prev.eventCreatedAt,
  });
  return id;
}

/** A new chain's first row (`pending`): fan-out, test events and replays. */
export async function insertFirstAttempt(
  tx: Executor,
  input: { accountId: string; endpointId: string; eventId: string; eventType: string; bodyId: string; kind: DeliveryKind; eventCreatedAt: Date },
): Promise<DeliveryRow> {
  const id = newId('delivery');
  const [row] = await tx
    .insert(webhookDeliveries)
    .values({ ...input, id, chainId: id, attempt: 1, status: 'pending' })
    .returning();
  return row;
}

/**
 * Drops the endpoint's open deliveries (spec: disabling for `failing` drops pending retries;
 * DELETE drops pending deliveries): they become `dead` with the reason, are never attempted,
 * and stay in the log (a replay can still send them). An attempt already under way then loses
 * its fence and records nothing.
 */
export async function dropOpenDeliveries(tx: Executor, endpointId: string, reason: string): Promise<number> {
  const rows = await tx
    .update(webhookDeliveries)
    .set({ status: 'dead', error: `dropped: ${reason}`, nextRetryAt: null })
    .where(and(eq(webhookDeliveries.endpointId, endpointId), inArray(webhookDeliveries.status, [...OPEN_STATUSES])))
    .returning({ id: webhookDeliveries.id });
  return rows.length;
}

/** A test event that could not be attempted now (no in-flight slot in time): `failed`, never retried. */
export async function failTestWithoutAttempt(db: Executor, deliveryId: string, error: string, now: Date): Promise<void> {
  await db
    .update(webhookDeliveries)
    .set({ status: 'failed', error, nextRetryAt: null, claimedUntil: null, attemptedAt: now })
    .where(and(eq(webhookDeliveries.id, deliveryId), inArray(webhookDeliveries.status, [...OPEN_STATUSES])));
}
