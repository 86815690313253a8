import type { approvals, messages } from '@teamchat/db';
import type { ChannelRow } from './access';
import { formatTs } from './ts';

export type MessageRow = typeof messages.$inferSelect;
export type ApprovalRow = typeof approvals.$inferSelect;

export interface ReactionSummary {
  emoji: string;
  count: number;
  by: string[];
}

/** A channel or DM as the API shows it. `members` only for DMs (fixed at opening). */
export function toChannelView(row: ChannelRow, extra: { members?: string[]; isMember?: boolean } = {}) {
  return {
    id: row.id,
    kind: row.kind,
    name: row.name,
    topic: row.topic,
    version: row.version,
    created_by: row.createdByIdentityId,
    client_ref: row.clientRef ?? null,
    ...(extra.members ? { members: extra.members } : {}),
    ...(extra.isMember === undefined ? {} : { is_member: extra.isMember }),
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  };
}

export function toMessageView(row: MessageRow, reactions: ReactionSummary[] = []) {
  return {
    ts: formatTs(row.tsMicros),
    channel_id: row.channelId,
    author: row.authorIdentityId,
    text: row.text,
    attachments: row.attachments,
    links: row.links,
    thread_ts: row.threadTsMicros === null ? null : formatTs(row.threadTsMicros),
    reply_count: row.replyCount,
    mentions: row.mentions,
    broadcast: row.broadcast,
    reactions,
    version: row.version,
    client_ref: row.clientRef ?? null,
    session: row.session ?? null,
    created_at: row.createdAt.toISOString(),
    edited_at: row.editedAt ? row.editedAt.toISOString() : null,
  };
}

export type MessageView = ReturnType<typeof toMessageView>;

/** A strong ETag carrying the version: `"3"`. */
export function etagOf(version: number): string {
  return `"${version}"`;
}
