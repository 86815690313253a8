import { and, approvals, desc, eq, gt, type Executor } from '@teamchat/db';
import type { Actor } from '../../principal';
import { getApproval, mayDecide } from './decide-approval';

/** At most this many pending approvals are listed (they expire within 24 hours, so few are ever pending). */
export const PENDING_APPROVALS_MAX = 100;

/**
 * The Approvals page's list (docs/web.md): pending, unexpired approvals of the account that this
 * person may decide, newest first, each as GET /approvals/{id} answers it (its own visibility
 * rules). Approvals others must decide are not listed: their existence can name a channel or a DM
 * the person cannot read.
 */
export async function listPendingApprovals(db: Executor, input: { actor: Actor; now: Date }) {
  const rows = await db
    .select()
    .from(approvals)
    .where(and(eq(approvals.accountId, input.actor.accountId), eq(approvals.status, 'pending'), gt(approvals.expiresAt, input.now)))
    .orderBy(desc(approvals.createdAt))
    .limit(PENDING_APPROVALS_MAX);
  const out = [];
  for (const row of rows) {
    if (await mayDecide(db, input.actor, row)) out.push(await getApproval(db, { actor: input.actor, approvalId: row.id, now: input.now }));
  }
  return out;
}
