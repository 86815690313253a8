import { Router } from 'express';
import Joi from 'joi';
import { auditViewsFor, errors, getJob, listAudit, listQuerySchema, toJobView } from '@teamchat/core';
import { requireScope } from '../http/account';
import { actorOf, depsOf, locals } from '../http/locals';
import { listRequest, sendPage } from '../http/lists';
import { validate } from '../http/validate';

/** Background jobs and the audit log. */
export function operationsRouter(): Router {
  const router = Router({ mergeParams: true });

  router.get('/jobs/:jobId', requireScope('account:manage'), validate({ params: { jobId: Joi.string().max(64).required() } }), async (req, res) => {
    const job = await getJob(depsOf(req).database.db, req.params.accountId as string, locals(res).valid.params.jobId);
    if (!job) throw errors.notFound('job');
    res.json(toJobView(job));
  });

  router.get('/audit', requireScope('audit:read'), validate({ query: listQuerySchema }), async (req, res) => {
    const page = listRequest<number>(req, res, 'audit');
    const db = depsOf(req).database.db;
    const rows = await listAudit(db, req.params.accountId as string, page);
    // Entries about channels the reader cannot read are redacted (core audit.ts).
    const views = new Map((await auditViewsFor(db, actorOf(res), rows)).map((v) => [v.id, v]));
    sendPage(req, res, 'audit', rows, page.limit, (r) => views.get(r.id)!, (r) => r.seq);
  });

  return router;
}
