import { Router } from 'express';
import { accountUsage, isManager, type Plan } from '@teamchat/core';
import { requireScope } from '../http/account';
import { actorOf, depsOf, locals } from '../http/locals';

/**
 * GET /accounts/{id}/usage (docs/web.md, "Account usage"): each seat's calls this minute and
 * call units today against the plan's limits. Owners and admins see every seat, a member their own.
 */
export function usageRouter(): Router {
  const router = Router({ mergeParams: true });
  router.get('/usage', requireScope('account:manage'), async (req, res) => {
    const deps = depsOf(req);
    const actor = actorOf(res);
    const account = locals(res).account!;
    res.json(await accountUsage(deps, { accountId: account.id, plan: account.plan as Plan, onlyUserId: isManager(actor.role) ? undefined : actor.userId }));
  });
  return router;
}
