import { API_READINESS, checkReadiness, liveness } from '@teamchat/core';
import { depsOf, locals } from '../http/locals';
import type { HandlerMap } from './handlers';

/**
 * Unauthenticated probes on both public hosts, for load balancers (docs/operations.md, 'Processes and ports'):
 * /healthz (the process is up), /readyz (warm and PostgreSQL answers; 503 naming the part that
 * failed; 200 `degraded` while Redis is away, which the API serves through), /status (the page `status_url` points at). /metrics is served only on the operations port.
 */
export const probeHandlers = {
  liveness: (_req, res) => {
    res.json({ ...liveness(), host: locals(res).host });
  },
  status: (_req, res) => {
    res.json({ status: 'ok', host: locals(res).host });
  },
  readiness: async (req, res) => {
    const r = await checkReadiness(depsOf(req), API_READINESS);
    res.status(r.httpStatus).json({ ...r.body, host: locals(res).host });
  },
} satisfies HandlerMap;
