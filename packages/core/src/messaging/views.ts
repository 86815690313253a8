import type { approvals, messages } from '@teamchat/db';
import type { ChannelRow } from './access';
import { formatTs } from './ts';

/** A message's values; `search_vector` is PostgreSQL's own (search only) and never mapped. */
export type MessageRow = Omit<typeof messages.$inferSelect, 'searchVector'>;
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

/** What a message's view is built from: its values, with `ts` and times already formatted. */
export interface MessageViewSource {
  ts: string;
  channelId: string;
  author: string;
  text: string;
  attachments: unknown;
  links: unknown;
  threadTs: string | null;
  replyCount: number;
  mentions: string[];
  broadcast: boolean;
  reactions: ReactionSummary[];
  version: number;
  clientRef: string | null;
  session: unknown;
  /** ISO 8601 UTC with milliseconds, as Date#toISOString */
  createdAt: string;
  editedAt: string | null;
}

/** The ONE shape of a message in the API (the page read builds its sources in SQL, list-messages.ts). */
export function messageView(s: MessageViewSource) {
  return {
    ts: s.ts,
    channel_id: s.channelId,
    author: s.author,
    text: s.text,
    attachments: s.attachments,
    links: s.links,
    thread_ts: s.threadTs,
    reply_count: s.replyCount,
    mentions: s.mentions,
    broadcast: s.broadcast,
    reactions: s.reactions,
    version: s.version,
    client_ref: s.clientRef,
    session: s.session ?? null,
    created_at: s.createdAt,
    edited_at: s.editedAt,
  };
}

export function toMessageView(row: MessageRow, reactions: ReactionSummary[] = []) {
  return messageView({
    ts: formatTs(row.tsMicros),
    channelId: row.channelId,
    author: row.authorIdentityId,
    text: row.text,
    attachments: row.attachments,
    links: row.links,
    threadTs: row.threadTsMicros === null ? null : formatTs(row.threadTsMicros),
    replyCount: row.replyCount,
    mentions: row.mentions,
    broadcast: row.broadcast,
    reactions,
    version: row.version,
    clientRef: row.clientRef ?? null,
    session: row.session,
    createdAt: row.createdAt.toISOString(),
    editedAt: row.editedAt ? row.editedAt.toISOString() : null,
  });
}

export type MessageView = ReturnType<typeof messageView>;

/** A strong ETag carrying the version: `"3"`. */
export function etagOf(version: number): string {
  return `"${version}"`;
}
