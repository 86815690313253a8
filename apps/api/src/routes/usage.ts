import { accountUsage, isManager, type Plan } from '@teamchat/core';
import { actorOf, depsOf, locals } from '../http/locals';
import type { HandlerMap } from './handlers';

/**
 * GET /accounts/{id}/usage (docs/web.md, "Account usage"): each seat's calls this minute and
 * call units today against the plan's limits. Owners and admins see every seat, a member their own.
 */
export const usageHandlers = {
  getUsage: async (req, res) => {
    const deps = depsOf(req);
    const actor = actorOf(res);
    const account = locals(res).account!;
    res.json(await accountUsage(deps, { accountId: account.id, plan: account.plan as Plan, onlyUserId: isManager(actor.role) ? undefined : actor.userId }));
  },
} satisfies HandlerMap;
