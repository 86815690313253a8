import { searchMessages, toMessageView } from '@teamchat/core';
import { actorOf, depsOf, locals } from '../http/locals';
import { listRequest, sendPage } from '../http/lists';
import type { HandlerMap } from './handlers';

/** GET /accounts/{id}/search: web session only (spec: Files and search). */
export const searchHandlers = {
  searchMessages: async (req, res) => {
    const actor = actorOf(res);
    const q: string = locals(res).valid.query.q;
    // The query is part of the list's identity: a cursor from another search is foreign.
    const list = `search:${q}`;
    const page = listRequest<[string, string]>(req, res, list);
    const deps = depsOf(req);
    // An expensive read: one at a time per account, within the pool's share (docs/api.md "Expensive reads").
    const rows = await deps.heavyReads.run(actor.accountId, 'search', () => searchMessages(deps.database.db, {
      accountId: actor.accountId, identityId: actor.identityId, query: q, limit: page.limit, after: page.after,
    }));
    sendPage(req, res, list, rows, page.limit, (m) => toMessageView(m), (m) => [m.tsMicros.toString(), m.channelId]);
  },
} satisfies HandlerMap;
