import { Router } from 'express';
import Joi from 'joi';
import { decideApproval, getApproval } from '@teamchat/core';
import { requireWebSession } from '../../http/account';
import { depsOf, locals } from '../../http/locals';
import { validate } from '../../http/validate';

const params = { id: Joi.string().max(64).required() };

/**
 * /approvals/{id}: a signed-in person sees what a credential asked to destroy and who asked,
 * then approves (the step runs as a background job; the answer carries job_id) or denies.
 */
export function approvalsRouter(): Router {
  const router = Router();

  router.get('/approvals/:id', requireWebSession, validate({ params }), async (req, res) => {
    const deps = depsOf(req);
    res.json(await getApproval(deps.database.db, { principal: locals(res).principal!, approvalId: locals(res).valid.params.id, now: deps.now() }));
  });

  for (const decision of ['approve', 'deny'] as const) {
    router.post(`/approvals/:id/${decision}`, requireWebSession, validate({ params }), async (req, res) => {
      const deps = depsOf(req);
      const l = locals(res);
      const { approval, jobId } = await deps.database.db.transaction((tx) =>
        decideApproval(tx, { principal: l.principal!, approvalId: l.valid.params.id, decision, now: deps.now(), requestId: l.requestId }));
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
    });
  }

  return router;
}
