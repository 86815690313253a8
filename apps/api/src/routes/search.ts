import { highlight, highlightTerms, searchKeyset, searchMessages, toMessageView, type SearchHit, type SearchSort } from '@teamchat/core';
import { actorOf, depsOf, locals } from '../http/locals';
import { listRequest, sendPage } from '../http/lists';
import type { HandlerMap } from './handlers';

/** GET /accounts/{id}/search: web session only (spec: Files and search; docs/api.md "Search"). */
export const searchHandlers = {
  searchMessages: async (req, res) => {
    const actor = actorOf(res);
    const v = locals(res).valid.query as { q: string; sort: SearchSort; channel?: string; from?: string; after?: Date; before?: Date };
    // The query, its filters and its sort are the list's identity: a cursor from another search is foreign.
    const list = `search:${JSON.stringify([v.q, v.sort, v.channel ?? null, v.from ?? null, v.after?.toISOString() ?? null, v.before?.toISOString() ?? null])}`;
    const page = listRequest<string[]>(req, res, list);
    const deps = depsOf(req);
    // An expensive read: one at a time per account, within the pool's share (docs/api.md "Expensive reads").
    const hits = await deps.heavyReads.run(actor.accountId, 'search', () => searchMessages(deps.database.db, {
      accountId: actor.accountId, identityId: actor.identityId, query: v.q, sort: v.sort,
      channelId: v.channel, fromIdentityId: v.from, after: v.after, before: v.before,
      limit: page.limit, cursor: page.after,
    }));
    const terms = highlightTerms(v.q);
    sendPage(req, res, list, hits, page.limit,
      (h: SearchHit) => ({ ...toMessageView(h.message), highlight: highlight(h.message.text, terms) }),
      (h) => searchKeyset(h, v.sort));
  },
} satisfies HandlerMap;
