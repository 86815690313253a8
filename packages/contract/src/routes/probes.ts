import Joi from 'joi';
import { route } from '../route';
import { livenessView, readinessView } from '../schemas/views';

/** Unauthenticated probes on both public hosts, for load balancers (docs/operations.md). */
export const probeRoutes = [
  route({
    id: 'liveness', method: 'GET', path: '/healthz', tag: 'Probes', access: 'public', idempotent: true,
    summary: 'Liveness: the process is up',
    description: 'Nothing external is checked, so a restart never cascades.',
    responses: { 200: { description: 'The process runs.', body: livenessView } },
  }),
  route({
    id: 'status', method: 'GET', path: '/status', tag: 'Probes', access: 'public', idempotent: true,
    summary: 'The page a 5xx error\'s `status_url` points at',
    responses: { 200: { description: 'The service answers.', body: Joi.object({ status: Joi.string().valid('ok').required(), host: Joi.string().valid('api', 'web').required() }).id('Status') } },
  }),
  route({
    id: 'readiness', method: 'GET', path: '/readyz', tag: 'Probes', access: 'public', idempotent: true,
    summary: 'Readiness: PostgreSQL and Redis answer',
    description: 'Answers 503 naming the part that failed (never a host name or an error text), and while a graceful shutdown drains the process.',
    responses: {
      200: { description: 'Ready.', body: readinessView },
      503: { description: 'Not ready: `checks` names the part that failed; `shutting_down` while draining.', body: readinessView },
    },
  }),
] as const;
