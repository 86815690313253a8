import { Router } from 'express';
import { listPendingApprovals } from '@teamchat/core';
import { requireWebSession } from '../http/account';
import { actorOf, depsOf } from '../http/locals';

/** GET /accounts/{id}/approvals: the pending approvals this person may decide (web session only; docs/web.md). */
export function approvalsListRouter(): Router {
  const router = Router({ mergeParams: true });
  router.get('/approvals', requireWebSession, async (req, res) => {
    const deps = depsOf(req);
    res.json({ data: await listPendingApprovals(deps.database.db, { actor: actorOf(res), now: deps.now() }), next_cursor: null });
  });
  return router;
}
