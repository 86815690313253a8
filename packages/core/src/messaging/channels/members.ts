import { and, asc, channelMembers, eq, gt, identities, type Executor } from '@teamchat/db';
import { recordAudit } from '../../audit';
import { AppError, errors } from '../../errors';
import { getIdentity } from '../../accounts/directory';
import type { Actor } from '../../principal';
import { loadChannel } from '../access';

type MemberRow = { seq: number; identityId: string; kind: string; name: string; addedAt: Date };

export function toChannelMemberView(channelId: string, row: MemberRow) {
  return { channel_id: channelId, identity_id: row.identityId, kind: row.kind, name: row.name, added_at: row.addedAt.toISOString() };
}

/** A channel's members, in the order they joined (keyset on seq). */
export async function listChannelMembers(
  db: Executor,
  input: { actor: Actor; channelId: string; page: { limit: number; after: number | null } },
): Promise<MemberRow[]> {
  await loadChannel(db, input.actor, input.channelId, 'meta');
  return db
    .select({ seq: channelMembers.seq, identityId: channelMembers.identityId, kind: identities.kind, name: identities.name, addedAt: channelMembers.addedAt })
    .from(channelMembers)
    .innerJoin(identities, eq(identities.id, channelMembers.identityId))
    .where(and(eq(channelMembers.channelId, input.channelId), input.page.after === null ? undefined : gt(channelMembers.seq, input.page.after)))
    .orderBy(asc(channelMembers.seq))
    .limit(input.page.limit + 1);
}

/**
 * Adds an identity of the account (person or agent) to a channel. A member may add anyone; an
 * owner/admin may also add (themselves included) without being a member. DMs keep the member
 * set they were opened with. Adding a member twice is harmless: `created: false`.
 */
export async function addChannelMember(
  tx: Executor,
  input: { actor: Actor; channelId: string; identityId: string },
): Promise<{ member: MemberRow; created: boolean }> {
  const { actor } = input;
  const { channel } = await loadChannel(tx, actor, input.channelId, 'meta');
  if (channel.kind === 'dm') throw new AppError('forbidden', 'The members of a direct message are fixed when it is opened.', { reason: 'dm' });
  const identity = await getIdentity(tx, actor.accountId, input.identityId);
  if (!identity) throw errors.invalid('identity_id does not name an identity of this account.', { field: 'identity_id' });
  const inserted = await tx
    .insert(channelMembers)
    .values({ channelId: channel.id, identityId: identity.id, accountId: actor.accountId })
    .onConflictDoNothing()
    .returning();
  const [row] = inserted.length
    ? inserted
    : await tx.select().from(channelMembers).where(and(eq(channelMembers.channelId, channel.id), eq(channelMembers.identityId, identity.id)));
  if (inserted.length) {
    await recordAudit(tx, { accountId: actor.accountId, action: 'channel.member_added', actor, targetType: 'channel', targetId: channel.id, data: { identity_id: identity.id } });
  }
  return {
    member: { seq: row.seq, identityId: identity.id, kind: identity.kind, name: identity.name, addedAt: row.addedAt },
    created: inserted.length > 0,
  };
}
