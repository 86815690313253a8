import type { Request, Response } from 'express';
import { decideApproval, getApproval } from '@teamchat/core';
import { actorOf, depsOf, locals } from '../../http/locals';
import type { HandlerMap } from '../handlers';

/** Approving runs the step as a background job (the answer carries job_id); denying runs nothing. */
function decide(decision: 'approve' | 'deny') {
  return async (req: Request, res: Response) => {
    const deps = depsOf(req);
    const l = locals(res);
    const { approval, jobId } = await deps.database.db.transaction((tx) =>
      decideApproval(tx, { actor: actorOf(res), approvalId: l.valid.params.approvalId, decision, now: deps.now() }));
    // Enqueue only after commit; if Redis is down the worker's sweep picks the queued job up.
    if (jobId) await deps.jobQueue.enqueue(jobId).catch((err: Error) => l.log.warn('enqueue after approval failed', { error: err.message }));
    res.status(jobId ? 202 : 200).json({
      id: approval.id,
      action: approval.action,
      status: approval.status,
      job_id: jobId,
      job_url: jobId ? `/accounts/${approval.accountId}/jobs/${jobId}` : null,
      decided_at: approval.decidedAt ? approval.decidedAt.toISOString() : null,
    });
  };
}

/**
 * /accounts/{accountId}/approvals/{approvalId}: a signed-in person of the account sees what a
 * credential asked to destroy and who asked, then approves or denies. Under the account, so
 * membership, account state and the seat's limits are checked as on every account route.
 */
export const approvalHandlers = {
  getApproval: async (req, res) => {
    const deps = depsOf(req);
    res.json(await getApproval(deps.database.db, { actor: actorOf(res), approvalId: locals(res).valid.params.approvalId, now: deps.now() }));
  },
  approveApproval: decide('approve'),
  denyApproval: decide('deny'),
} satisfies HandlerMap;
