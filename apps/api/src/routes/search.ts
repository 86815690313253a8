import { Router } from 'express';
import Joi from 'joi';
import { listQuerySchema, searchMessages, toMessageView } from '@teamchat/core';
import { requireWebSession } from '../http/account';
import { actorOf, depsOf, locals } from '../http/locals';
import { listRequest, sendPage } from '../http/lists';
import { validate } from '../http/validate';

/** GET /accounts/{id}/search: web session only (spec: Files and search). */
export function searchRouter(): Router {
  const router = Router({ mergeParams: true });
  router.get(
    '/search',
    requireWebSession,
    validate({ query: { ...listQuerySchema, q: Joi.string().trim().min(1).max(200).required() } }),
    async (req, res) => {
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
  );
  return router;
}
