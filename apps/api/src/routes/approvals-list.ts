import { listPendingApprovals } from '@teamchat/core';
import { actorOf, depsOf } from '../http/locals';
import type { HandlerMap } from './handlers';

/** GET /accounts/{id}/approvals: the pending approvals this person may decide (web session only; docs/web.md). */
export const approvalsListHandlers = {
  listPendingApprovals: async (req, res) => {
    const deps = depsOf(req);
    res.json({ data: await listPendingApprovals(deps.database.db, { actor: actorOf(res), now: deps.now() }), next_cursor: null });
  },
} satisfies HandlerMap;
