import { auditViewsFor, errors, getJob, listAudit, toJobView } from '@teamchat/core';
import { actorOf, depsOf, locals } from '../http/locals';
import { listRequest, sendPage } from '../http/lists';
import type { HandlerMap } from './handlers';

/** Background jobs and the audit log. */
export const operationsHandlers = {
  getJob: async (req, res) => {
    const job = await getJob(depsOf(req).database.db, req.params.accountId as string, locals(res).valid.params.jobId);
    if (!job) throw errors.notFound('job');
    res.json(toJobView(job));
  },

  listAudit: async (req, res) => {
    const page = listRequest<number>(req, res, 'audit');
    const db = depsOf(req).database.db;
    const rows = await listAudit(db, req.params.accountId as string, page);
    // Entries about channels the reader cannot read are redacted (core audit.ts).
    const views = new Map((await auditViewsFor(db, actorOf(res), rows)).map((v) => [v.id, v]));
    sendPage(req, res, 'audit', rows, page.limit, (r) => views.get(r.id)!, (r) => r.seq);
  },
} satisfies HandlerMap;
