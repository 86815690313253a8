import { Router } from 'express';
import Joi from 'joi';
import { errors, getJob, listAudit, listQuerySchema, toAuditView, toJobView } from '@teamchat/core';
import { requireScope } from '../http/account';
import { depsOf, locals } from '../http/locals';
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
    const rows = await listAudit(depsOf(req).database.db, req.params.accountId as string, page);
    sendPage(req, res, 'audit', rows, page.limit, toAuditView, (r) => r.seq);
  });

  return router;
}
