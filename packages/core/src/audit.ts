import { and, auditRecords, channelMembers, channels, eq, inArray, type Executor } from '@teamchat/db';
import { isManager } from './scopes';
import { seqKeyset } from './pagination';
import { newId } from './ids';
import type { Actor } from './principal';

export interface AuditInput {
  accountId: string;
  action: string;
  /** who did it: an actor from a request, or the operator CLI / the system */
  actor?: Actor;
  via?: 'cli' | 'system';
  targetType?: string;
  targetId?: string;
  data?: Record<string, unknown>;
  requestId?: string;
}

/** Writes an audit record in the caller's transaction, so it exists exactly when the change does. */
export async function recordAudit(tx: Executor, input: AuditInput): Promise<void> {
  await tx.insert(auditRecords).values({
    id: newId('audit'),
    accountId: input.accountId,
    action: input.action,
    actorUserId: input.actor?.userId,
    actorIdentityId: input.actor?.identityId,
    actorCredentialId: input.actor && input.actor.principal.via !== 'web_session' ? input.actor.principal.id : undefined,
    via: input.actor?.principal.via ?? input.via ?? 'system',
    targetType: input.targetType,
    targetId: input.targetId,
    data: input.data ?? {},
    requestId: input.requestId ?? input.actor?.requestId,
  });
}

type AuditRow = typeof auditRecords.$inferSelect;

export function toAuditView(row: AuditRow) {
  return {
    id: row.id,
    action: row.action,
    actor: { user_id: row.actorUserId, identity_id: row.actorIdentityId, credential_id: row.actorCredentialId, via: row.via },
    target: row.targetType ? { type: row.targetType, id: row.targetId } : null,
    data: row.data,
    request_id: row.requestId,
    created_at: row.createdAt.toISOString(),
  };
}

/** Newest first; keyset on seq. */
export async function listAudit(db: Executor, accountId: string, page: { limit: number; after: number | null }) {
  const k = seqKeyset(auditRecords.seq, page.after, 'desc');
  return db.select().from(auditRecords).where(and(eq(auditRecords.accountId, accountId), k.after)).orderBy(k.order).limit(page.limit + 1);
}

/** The channel an audit entry is about, if any: a channel target, a message target (`ch/ts`), or `data.target.channel_id`. */
function channelOf(row: AuditRow): string | null {
  if (row.targetType === 'channel' && row.targetId) return row.targetId;
  if (row.targetType === 'message' && row.targetId) return row.targetId.split('/')[0];
  const target = (row.data as { target?: { channel_id?: unknown } } | null)?.target;
  return typeof target?.channel_id === 'string' ? target.channel_id : null;
}

export type AuditView = ReturnType<typeof toAuditView> & { redacted?: true };

/**
 * The audit page as `reader` may see it: an entry about a channel they could not read elsewhere
 * (a DM they are not in; for a member, a regular channel they are not in) keeps its action,
 * actor and time, without target or data (`redacted: true`). Owners and admins may read any
 * regular channel's name and join it, so they see those entries; no one sees another's DM.
 */
export async function auditViewsFor(db: Executor, reader: Pick<Actor, 'identityId' | 'role'>, rows: AuditRow[]): Promise<AuditView[]> {
  const ids = [...new Set(rows.map(channelOf).filter((id): id is string => id !== null))];
  const readable = new Set<string>();
  if (ids.length > 0) {
    const found = await db
      .select({ id: channels.id, kind: channels.kind, member: channelMembers.identityId })
      .from(channels)
      .leftJoin(channelMembers, and(eq(channelMembers.channelId, channels.id), eq(channelMembers.identityId, reader.identityId)))
      .where(inArray(channels.id, ids));
    for (const c of found) if (c.member !== null || (c.kind === 'channel' && isManager(reader.role))) readable.add(c.id);
  }
  return rows.map((row) => {
    const channelId = channelOf(row);
    const view = toAuditView(row);
    if (channelId === null || readable.has(channelId)) return view;
    return { ...view, target: null, data: {}, redacted: true as const };
  });
}
