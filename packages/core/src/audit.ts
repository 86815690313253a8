import { and, auditRecords, eq, type Executor } from '@teamchat/db';
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
