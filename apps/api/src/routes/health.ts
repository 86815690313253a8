import { Router } from 'express';
import { checkReadiness, liveness } from '@teamchat/core';
import { notFoundHandler } from '../http/error-handler';
import { depsOf, locals } from '../http/locals';

/**
 * Unauthenticated probes on both public hosts, for load balancers (docs/operations.md, 'Processes and ports'):
 * /healthz (the process is up), /readyz (PostgreSQL and Redis answer; 503 naming the part that
 * failed), /status (the page `status_url` points at). /metrics is served only on the operations port.
 */
export function healthRouter(): Router {
  const router = Router();
  router.get('/healthz', (_req, res) => {
    res.json({ ...liveness(), host: locals(res).host });
  });
  router.get('/status', (_req, res) => {
    res.json({ status: 'ok', host: locals(res).host });
  });
  router.get('/readyz', async (req, res) => {
    const r = await checkReadiness(depsOf(req));
    res.status(r.httpStatus).json({ ...r.body, host: locals(res).host });
  });
  // Metrics are for the operations port only: 404 here before any credential is asked for.
  router.all('/metrics', notFoundHandler);
  return router;
}
