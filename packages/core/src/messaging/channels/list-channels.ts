import { and, asc, channelMembers, channels, eq, gt, inArray, sql, type Executor } from '@teamchat/db';
import type { Actor } from '../../principal';
import { isManager } from '../../scopes';

/**
 * Channels visible to the caller, oldest first (keyset on seq): those it is a member of; an
 * owner or admin sees every regular channel (each with `is_member`). DMs are listed under /dms.
 */
export async function listChannels(db: Executor, actor: Actor, page: { limit: number; after: number | null }) {
  const memberOf = sql<boolean>`EXISTS (SELECT 1 FROM channel_members m WHERE m.channel_id = ${channels.id} AND m.identity_id = ${actor.identityId})`;
  return db
    .select({ channel: channels, isMember: memberOf })
    .from(channels)
    .where(and(
      eq(channels.accountId, actor.accountId),
      eq(channels.kind, 'channel'),
      isManager(actor.role) ? undefined : memberOf,
      page.after === null ? undefined : gt(channels.seq, page.after),
    ))
    .orderBy(asc(channels.seq))
    .limit(page.limit + 1);
}

/** The identity ids of a channel's members (DM views carry them). */
export async function memberIdsOf(db: Executor, channelIds: string[]): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>();
  if (channelIds.length === 0) return out;
  const rows = await db
    .select({ channelId: channelMembers.channelId, identityId: channelMembers.identityId })
    .from(channelMembers)
    .where(inArray(channelMembers.channelId, channelIds))
    .orderBy(asc(channelMembers.seq));
  for (const r of rows) out.set(r.channelId, [...(out.get(r.channelId) ?? []), r.identityId]);
  return out;
}
