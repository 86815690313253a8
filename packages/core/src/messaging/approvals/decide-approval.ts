import { and, approvals, channels, eq, identities, messages, users, type Executor } from '@teamchat/db';
import { accountStateError } from '../../accounts/accounts';
import { getIdentity, resolveActor } from '../../accounts/directory';
import { recordAudit } from '../../audit';
import { AppError, errors } from '../../errors';
import { createJob } from '../../jobs/store';
import type { Actor, Principal } from '../../principal';
import { isManager } from '../../scopes';
import { parseTs } from '../ts';
import type { ApprovalRow } from '../views';
import { MESSAGE_DELETE_JOB } from './job-types';

export type ApprovalStatus = 'pending' | 'approved' | 'denied' | 'expired';

export function statusOf(row: ApprovalRow, now: Date): ApprovalStatus {
  if (row.status === 'pending' && row.expiresAt.getTime() <= now.getTime()) return 'expired';
  return row.status as ApprovalStatus;
}

/**
 * The signed-in person behind `principal`, inside the approval's account (403 not_a_member if
 * they have no seat there; an inactive account answers read_only/suspended).
 */
async function approvalActor(db: Executor, principal: Principal, approvalId: string, options: { forUpdate?: boolean } = {}) {
  const query = db.select().from(approvals).where(eq(approvals.id, approvalId));
  const [row] = options.forUpdate ? await query.for('update') : await query;
  if (!row) throw errors.notFound('approval');
  const { account, actor } = await resolveActor(db, principal, row.accountId);
  const stateError = accountStateError(account.state);
  if (stateError) throw stateError;
  return { row, actor };
}

/** The author of what is destroyed (or the person who approved that agent), or an owner/admin. */
async function mayDecide(db: Executor, actor: Actor, row: ApprovalRow): Promise<boolean> {
  if (isManager(actor.role)) return true;
  if (!row.ownerIdentityId) return false;
  if (row.ownerIdentityId === actor.identityId) return true;
  const owner = await getIdentity(db, row.accountId, row.ownerIdentityId);
  return owner?.kind === 'agent' && owner.approvedByUserId === actor.userId;
}

/** What will happen and who asked: GET /approvals/{id}. */
export async function getApproval(db: Executor, input: { principal: Principal; approvalId: string; now: Date }) {
  const { row, actor } = await approvalActor(db, input.principal, input.approvalId);
  const target = row.target as { channel_id: string; ts: string };
  const [channel] = await db.select({ name: channels.name, kind: channels.kind }).from(channels).where(eq(channels.id, target.channel_id));
  const [message] = await db
    .select({ author: messages.authorIdentityId, text: messages.text })
    .from(messages)
    .where(and(eq(messages.channelId, target.channel_id), eq(messages.tsMicros, parseTs(target.ts))));
  const [requester] = await db
    .select({ email: users.email, name: identities.name, kind: identities.kind })
    .from(identities)
    .leftJoin(users, eq(users.id, row.requestedByUserId))
    .where(eq(identities.id, row.requestedByIdentityId));
  return {
    id: row.id,
    action: row.action,
    status: statusOf(row, input.now),
    summary: row.summary,
    target: {
      channel_id: target.channel_id,
      channel_name: channel?.name ?? null,
      channel_kind: channel?.kind ?? null,
      ts: target.ts,
      exists: Boolean(message),
      author: message?.author ?? row.ownerIdentityId,
      text_preview: message ? message.text.slice(0, 280) : null,
    },
    requested_by: {
      user_id: row.requestedByUserId,
      email: requester?.email ?? null,
      identity_id: row.requestedByIdentityId,
      identity_kind: requester?.kind ?? null,
      identity_name: requester?.name ?? null,
    },
    you_may_decide: await mayDecide(db, actor, row),
    job_id: row.jobId ?? null,
    decided_by_user_id: row.decidedByUserId ?? null,
    created_at: row.createdAt.toISOString(),
    expires_at: row.expiresAt.toISOString(),
    decided_at: row.decidedAt ? row.decidedAt.toISOString() : null,
  };
}

/**
 * Approves or denies a pending approval (web session; the author or an owner/admin). Approving
 * records the job that runs the step, in this transaction; the caller enqueues it after commit.
 */
export async function decideApproval(
  tx: Executor,
  input: { principal: Principal; approvalId: string; decision: 'approve' | 'deny'; now: Date; requestId?: string },
): Promise<{ approval: ApprovalRow; jobId: string | null }> {
  const { row, actor } = await approvalActor(tx, input.principal, input.approvalId, { forUpdate: true });
  actor.requestId = input.requestId;
  const status = statusOf(row, input.now);
  if (status !== 'pending') {
    // Deciding what is no longer pending is a refused action (spec Errors: forbidden), not a 409.
    throw new AppError('forbidden', status === 'expired' ? 'This approval has expired; ask again.' : `This approval was already ${status}.`, { reason: status === 'expired' ? 'expired' : 'already_decided', status });
  }
  if (!(await mayDecide(tx, actor, row))) {
    throw new AppError('forbidden', 'Only the author of the message or an owner/admin may decide this.', { reason: 'not_author' });
  }
  let jobId: string | null = null;
  if (input.decision === 'approve') {
    const job = await createJob(tx, { accountId: row.accountId, type: MESSAGE_DELETE_JOB, payload: { approval_id: row.id }, createdByUserId: actor.userId });
    jobId = job.id;
  }
  const [approval] = await tx
    .update(approvals)
    .set({ status: input.decision === 'approve' ? 'approved' : 'denied', jobId, decidedByUserId: actor.userId, decidedAt: input.now })
    .where(eq(approvals.id, row.id))
    .returning();
  await recordAudit(tx, {
    accountId: row.accountId, action: input.decision === 'approve' ? 'approval.approved' : 'approval.denied', actor,
    targetType: 'approval', targetId: row.id, data: { action: row.action, target: row.target, job_id: jobId },
  });
  return { approval, jobId };
}
