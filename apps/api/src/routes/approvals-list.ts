import type { Request } from 'express';
import { invalidCursor, listPendingApprovals } from '@teamchat/core';
import { actorOf, depsOf } from '../http/locals';
import type { HandlerMap } from './handlers';

/**
 * This list is one page (at most 100; approvals expire within 24 hours), so it never issues a
 * cursor (`next_cursor` is always null) and no cursor can continue it: one sent is foreign to it
 * and answers 400 invalid_cursor, as a foreign cursor does on every list (spec: Common
 * conventions), rather than a silent 200 that looks like a second page (docs/api.md "Cursors").
 */
function refuseCursor(req: Request): void {
  if (req.query.cursor !== undefined) throw invalidCursor('not one this list issued (it is a single page; next_cursor is always null)');
}

/** GET /accounts/{id}/approvals: the pending approvals this person may decide (web session only; docs/web.md). */
export const approvalsListHandlers = {
  listPendingApprovals: async (req, res) => {
    refuseCursor(req);
    const deps = depsOf(req);
    res.json({ data: await listPendingApprovals(deps.database.db, { actor: actorOf(res), now: deps.now() }), next_cursor: null });
  },
} satisfies HandlerMap;
