import { and, asc, channelMembers, channels, eq, gt, identities, inArray, type Executor } from '@teamchat/db';
import { recordAudit } from '../../audit';
import { errors } from '../../errors';
import { newId } from '../../ids';
import type { Actor } from '../../principal';
import type { ChannelRow } from '../access';

/**
 * Opens the direct message between the caller and `others` (identity ids of the account). The
 * member set, sorted, is the DM's `dm_key`; opening the same set again returns the existing
 * DM (`created: false`), also when two callers open it at the same moment.
 */
export async function openDm(
  tx: Executor,
  input: { actor: Actor; others: string[]; clientRef?: string },
): Promise<{ channel: ChannelRow; members: string[]; created: boolean }> {
  const { actor } = input;
  const memberIds = [...new Set([actor.identityId, ...input.others])].sort();
  if (memberIds.length < 2) throw errors.invalid('members must name at least one identity besides yours.', { field: 'members' });
  const found = await tx
    .select({ id: identities.id })
    .from(identities)
    .where(and(eq(identities.accountId, actor.accountId), inArray(identities.id, memberIds)));
  if (found.length !== memberIds.length) {
    const known = new Set(found.map((r) => r.id));
    throw errors.invalid(`members: ${memberIds.filter((id) => !known.has(id)).join(', ')} is not an identity of this account.`, { field: 'members' });
  }
  const dmKey = memberIds.join(',');
  const [inserted] = await tx
    .insert(channels)
    .values({
      id: newId('channel'), accountId: actor.accountId, kind: 'dm', dmKey, clientRef: input.clientRef, createdByIdentityId: actor.identityId,
    })
    // A concurrent open of the same set waits here for the other transaction, then finds its row.
    .onConflictDoNothing()
    .returning();
  if (!inserted) {
    const [existing] = await tx.select().from(channels).where(and(eq(channels.accountId, actor.accountId), eq(channels.kind, 'dm'), eq(channels.dmKey, dmKey)));
    return { channel: existing, members: memberIds, created: false };
  }
  await tx.insert(channelMembers).values(memberIds.map((identityId) => ({ channelId: inserted.id, identityId, accountId: actor.accountId })));
  await recordAudit(tx, { accountId: actor.accountId, action: 'dm.opened', actor, targetType: 'channel', targetId: inserted.id, data: { members: memberIds } });
  return { channel: inserted, members: memberIds, created: true };
}

/** The caller's direct messages, oldest first (keyset on seq). */
export async function listDms(db: Executor, actor: Actor, page: { limit: number; after: number | null }) {
  const rows = await db
    .select({ channel: channels })
    .from(channels)
    .innerJoin(channelMembers, and(eq(channelMembers.channelId, channels.id), eq(channelMembers.identityId, actor.identityId)))
    .where(and(eq(channels.accountId, actor.accountId), eq(channels.kind, 'dm'), page.after === null ? undefined : gt(channels.seq, page.after)))
    .orderBy(asc(channels.seq))
    .limit(page.limit + 1);
  return rows.map((r) => r.channel);
}
