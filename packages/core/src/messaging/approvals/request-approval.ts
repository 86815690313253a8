import { and, approvals, eq, gt, sql, type Executor } from '@teamchat/db';
import { recordAudit } from '../../audit';
import { newId } from '../../ids';
import type { Actor } from '../../principal';
import type { ApprovalRow } from '../views';

/** Approvals expire 24 hours after they are asked for. */
export const APPROVAL_TTL_MS = 24 * 60 * 60 * 1000;

export type ApprovalAction = 'message.delete';

/**
 * Records a destructive step asked for through a credential, to be confirmed by a person. The
 * same requester asking again for the same step while one is pending gets that one back.
 */
export async function requestApproval(
  tx: Executor,
  input: { actor: Actor; action: ApprovalAction; target: Record<string, string>; summary: string; ownerIdentityId: string | null; now: Date },
): Promise<ApprovalRow> {
  const { actor } = input;
  const [pending] = await tx
    .select()
    .from(approvals)
    .where(and(
      eq(approvals.accountId, actor.accountId),
      eq(approvals.action, input.action),
      eq(approvals.status, 'pending'),
      eq(approvals.requestedByIdentityId, actor.identityId),
      eq(approvals.requestedByUserId, actor.userId),
      sql`${approvals.target} = ${JSON.stringify(input.target)}::jsonb`,
      gt(approvals.expiresAt, input.now),
    ))
    .limit(1);
  if (pending) return pending;
  const [row] = await tx
    .insert(approvals)
    .values({
      id: newId('approval'),
      accountId: actor.accountId,
      action: input.action,
      target: input.target,
      summary: input.summary,
      requestedByUserId: actor.userId,
      requestedByIdentityId: actor.identityId,
      ownerIdentityId: input.ownerIdentityId,
      expiresAt: new Date(input.now.getTime() + APPROVAL_TTL_MS),
    })
    .returning();
  await recordAudit(tx, { accountId: actor.accountId, action: 'approval.requested', actor, targetType: 'approval', targetId: row.id, data: { action: input.action, target: input.target } });
  return row;
}
