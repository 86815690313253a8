import { and, approvals, channels, eq, identities, messages, users, type Executor } from '@teamchat/db';
import { getIdentity } from '../../accounts/directory';
import { getMembership } from '../../accounts/people';
import { recordAudit } from '../../audit';
import { AppError, errors } from '../../errors';
import { createJob } from '../../jobs/store';
import type { Actor } from '../../principal';
import { isManager, type Role } from '../../scopes';
import { isChannelMember } from '../access';
import { parseTs } from '../ts';
import type { ApprovalRow } from '../views';
import { MESSAGE_DELETE_JOB } from './job-types';

export type ApprovalStatus = 'pending' | 'approved' | 'denied' | 'expired';

export function statusOf(row: ApprovalRow, now: Date): ApprovalStatus {
  if (row.status === 'pending' && row.expiresAt.getTime() <= now.getTime()) return 'expired';
  return row.status as ApprovalStatus;
}

/**
 * An approval of the actor's account. The account's checks (membership, state, limits) already
 * ran on the route (it lives under /accounts/{accountId}); an approval of another account is not
 * found.
 */
async function loadApproval(db: Executor, actor: Actor, approvalId: string, options: { forUpdate?: boolean } = {}) {
  const query = db.select().from(approvals).where(and(eq(approvals.id, approvalId), eq(approvals.accountId, actor.accountId)));
  const [row] = options.forUpdate ? await query.for('update') : await query;
  if (!row) throw errors.notFound('approval');
  return row;
}

/** Who decides: the seat's person as they are now (role, person identity). */
export interface Decider {
  userId: string;
  identityId: string;
  role: Role;
}

/**
 * Whether `who` may decide (and, when the job runs, still may): a person who could do the step
 * themselves on the web, i.e. a member of the channel who is the author or an owner/admin; or
 * the person who approved the agent that wrote the message (they answer for it). A DM is closed
 * to anyone outside it, an owner or admin included; an admin outside a regular channel would
 * have to join it first, in the open.
 */
export async function mayDecide(db: Executor, who: Decider, row: ApprovalRow): Promise<boolean> {
  if (row.ownerIdentityId && row.ownerIdentityId !== who.identityId) {
    const owner = await getIdentity(db, row.accountId, row.ownerIdentityId);
    if (owner?.kind === 'agent' && owner.approvedByUserId === who.userId) return true;
  }
  if (!isManager(who.role) && (!row.ownerIdentityId || row.ownerIdentityId !== who.identityId)) return false;
  const target = row.target as { channel_id: string };
  return isChannelMember(db, target.channel_id, who.identityId);
}

/**
 * Re-checks, when an approved step runs, that the person who approved it still may: a seat in
 * the account, and the rights `mayDecide` asks for (a demoted admin, or one who left the
 * channel, runs nothing). Throws 403 forbidden, `reason: approver_lost_rights`.
 */
export async function assertDeciderStillMay(db: Executor, row: ApprovalRow): Promise<void> {
  const seat = row.decidedByUserId ? await getMembership(db, row.accountId, row.decidedByUserId) : undefined;
  const may = seat ? await mayDecide(db, { userId: seat.userId, identityId: seat.identityId, role: seat.role as Role }, row) : false;
  if (!may) {
    throw new AppError('forbidden', 'The person who approved this may no longer do it (their seat, role or channel membership changed); nothing was done.', {
      reason: 'approver_lost_rights',
    });
  }
}

/**
 * What will happen and who asked: GET /accounts/{accountId}/approvals/{approvalId}. The message's
 * text (and a DM's or a channel's name) is shown only to a person who can read that channel, i.e.
 * its members (docs/api.md, 'Deletion and approvals'); anyone else with a seat sees the rest, `can_read_channel: false`.
 */
export async function getApproval(db: Executor, input: { actor: Actor; approvalId: string; now: Date }) {
  const { actor } = input;
  const row = await loadApproval(db, actor, input.approvalId);
  const target = row.target as { channel_id: string; ts: string };
  const [channel] = await db
    .select({ name: channels.name, kind: channels.kind })
    .from(channels)
    .where(and(eq(channels.id, target.channel_id), eq(channels.accountId, actor.accountId)));
  const canRead = Boolean(channel) && (await isChannelMember(db, target.channel_id, actor.identityId));
  // Owners and admins may see a regular channel's name (as on GET /channels/{id}); never a DM's.
  const mayNameChannel = canRead || (channel?.kind === 'channel' && isManager(actor.role));
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
      channel_name: mayNameChannel ? (channel?.name ?? null) : null,
      channel_kind: channel?.kind ?? null,
      ts: target.ts,
      exists: Boolean(message),
      author: message?.author ?? row.ownerIdentityId,
      can_read_channel: canRead,
      text_preview: message && canRead ? message.text.slice(0, 280) : null,
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
  input: { actor: Actor; approvalId: string; decision: 'approve' | 'deny'; now: Date },
): Promise<{ approval: ApprovalRow; jobId: string | null }> {
  const { actor } = input;
  const row = await loadApproval(tx, actor, input.approvalId, { forUpdate: true });
  const status = statusOf(row, input.now);
  if (status !== 'pending') {
    // Deciding what is no longer pending is a refused action (spec Errors: forbidden), not a 409.
    throw new AppError('forbidden', status === 'expired' ? 'This approval has expired; ask again.' : `This approval was already ${status}.`, { reason: status === 'expired' ? 'expired' : 'already_decided', status });
  }
  if (!(await mayDecide(tx, actor, row))) {
    throw new AppError('forbidden', 'Only a member of the channel who is the author or an owner/admin (or the person who approved the agent that wrote it) may decide this.', { reason: 'not_author' });
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
