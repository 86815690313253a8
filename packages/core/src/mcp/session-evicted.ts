import { events, type Executor } from '@teamchat/db';
import { newId } from '../ids';
import type { MessageSession } from '../events/types';

export interface SessionEvictedInput {
  accountId: string;
  /** the seat whose cap was reached */
  userId: string;
  /** the evicted session: who it acted as, through which credential, from which client */
  identityId: string;
  credentialId: string;
  session: MessageSession;
  openedAt: Date;
  lastUsedAt: Date;
  /** the seat's cap that was reached */
  cap: number;
}

/**
 * Writes the `session.evicted` outbox row (spec: Events; subscribable, not sent yet). Not about
 * a channel, so `channel_id` is null.
 */
export async function recordSessionEvicted(tx: Executor, input: SessionEvictedInput): Promise<string> {
  const id = newId('event');
  await tx.insert(events).values({
    id,
    accountId: input.accountId,
    type: 'session.evicted',
    channelId: null,
    data: {
      user_id: input.userId,
      identity_id: input.identityId,
      credential_id: input.credentialId,
      session: input.session,
      opened_at: input.openedAt.toISOString(),
      last_used_at: input.lastUsedAt.toISOString(),
      reason: 'seat_session_cap',
      cap: input.cap,
    },
  });
  return id;
}
