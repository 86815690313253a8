import { events, type Executor } from '@teamchat/db';
import { newId } from '../ids';
import type { EventData, EventInput, RowEventType } from './types';

/** One outbox row as written: a new id, and the channel taken from the event's data. */
export interface EventRowValues {
  id: string;
  accountId: string;
  type: RowEventType;
  channelId: string | null;
  data: EventData;
}

/** The rows recordEvents writes (also for a use case that writes them inside one statement of its own). */
export function eventRows(inputs: EventInput[]): EventRowValues[] {
  return inputs.map((e) => ({
    id: newId('event'),
    accountId: e.accountId,
    type: e.type,
    channelId: 'channel' in e.data ? e.data.channel.id : null,
    data: e.data,
  }));
}

/**
 * The PostgreSQL channel notified after every commit of outbox rows (RelayWakeUps, wake.ts): it
 * wakes the webhook relay at once (docs/webhooks.md "The delivery engine").
 */
export const EVENTS_CHANNEL = 'teamchat_events';

/**
 * The outbox writer: inserts the events in the caller's transaction, so they exist exactly
 * when the change does (a rolled-back write leaves none). It does not wake the relay: the owner
 * of the transaction does, once it has committed (`outboxTransaction`, wake.ts; a NOTIFY inside
 * the transaction would hold PostgreSQL's notify lock through its commit). Returns the event ids.
 */
export async function recordEvents(tx: Executor, inputs: EventInput[]): Promise<string[]> {
  if (inputs.length === 0) return [];
  const rows = eventRows(inputs);
  await tx.insert(events).values(rows);
  return rows.map((r) => r.id);
}

export async function recordEvent(tx: Executor, input: EventInput): Promise<string> {
  const [id] = await recordEvents(tx, [input]);
  return id;
}
