import { eq, events, webhookBodies, type Executor } from '@teamchat/db';
import { AppError } from '../../errors';
import { isChannelMember } from '../../messaging/access';
import type { Actor } from '../../principal';
import type { WebhookEndpointRow } from './load';

/**
 * Who may make an endpoint carry text (docs/webhooks.md "Who reads what an endpoint sends").
 * Nobody receives, through an endpoint they changed or replayed, a body carrying text they could
 * not read themselves:
 * - future deliveries: a `text` body goes out only where the endpoint's creator is a member of the
 *   event's channel (fan-out's `textReaders`); whoever changes where an endpoint sends (`url`) or
 *   what it sends (`payload`) becomes its creator, so its text is gated by their memberships and
 *   its units are charged to their seat;
 * - replays: a stored `text` body is sent again only for a caller who is a member of its channel
 *   (`assertMayReplayBody`);
 * - the delivery log's detail view: a `text` body is shown only to a caller who may read it
 *   (mayReadBody); to anyone else it is withheld (`body: null`, `body_withheld: "cannot_read_channel"`);
 * - test events carry no content.
 */

/** The creator an endpoint has after this change: the actor when it changes `url` or `payload` and was not the creator. */
export function creatorAfterChange(row: Pick<WebhookEndpointRow, 'createdByUserId' | 'url' | 'payload'>, actor: Actor, change: { url?: string; payload?: string }): string {
  const repointed = (change.url !== undefined && change.url !== row.url) || (change.payload !== undefined && change.payload !== row.payload);
  return repointed ? actor.userId : row.createdByUserId;
}

/**
 * Whether `actor` may see a stored body: a `pointers` body always; a `text` body only when the
 * actor can read its channel now (a member of it, DMs included: what GET .../messages requires).
 * A body whose event is gone (retention) is treated as unreadable: its channel can no longer be checked.
 */
export async function mayReadBody(db: Executor, input: { bodyId: string; actor: Actor }): Promise<boolean> {
  const [body] = await db
    .select({ mode: webhookBodies.mode, channelId: events.channelId })
    .from(webhookBodies)
    .leftJoin(events, eq(events.id, webhookBodies.eventId))
    .where(eq(webhookBodies.id, input.bodyId));
  if (!body || body.mode !== 'text') return true;
  return Boolean(body.channelId && await isChannelMember(db, body.channelId, input.actor.identityId));
}

/**
 * A replay sends the stored body again: a `text` body only to a caller who may read it
 * (mayReadBody). Otherwise 403 forbidden, reason `cannot_read_channel`.
 */
export async function assertMayReplayBody(db: Executor, input: { bodyId: string; actor: Actor }): Promise<void> {
  if (await mayReadBody(db, input)) return;
  throw new AppError('forbidden', 'This delivery carries message text from a channel you cannot read; it can be replayed only by a member of that channel.', { reason: 'cannot_read_channel' });
}
