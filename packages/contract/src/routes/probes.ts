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
    summary: 'Readiness: PostgreSQL and Redis answer and the process is warm',
    description: 'Answers 503 naming the part that failed (never a host name or an error text), while the process is still warming up (`warm: pending`), and while a graceful shutdown drains the process.',
    responses: {
      200: { description: 'Ready.', body: readinessView },
      503: { description: 'Not ready: `checks` names the part that failed; `shutting_down` while draining.', body: readinessView },
    },
  }),
  route({
    id: 'getOpenApiDocument', method: 'GET', path: '/openapi.json', tag: 'Reference', access: 'public', idempotent: true,
    summary: 'This document',
    description: 'The OpenAPI 3.1 document of both hosts, generated from the route declarations; `servers` names the host that served it.',
    responses: { 200: { description: 'The document.', body: Joi.object().unknown(true) } },
  }),
  route({
    id: 'getApiReference', method: 'GET', path: '/docs', tag: 'Reference', access: 'public', idempotent: true,
    summary: 'The API reference, readable (Redoc)',
    description: 'Served from this origin with no outside resource (no CDN, no fonts), so it works on an air-gapped install.',
    responses: { 200: { description: 'An HTML page rendering /openapi.json.', body: Joi.string(), contentType: 'text/html' } },
  }),
  route({
    id: 'getApiReferenceScript', method: 'GET', path: '/docs/redoc.standalone.js', tag: 'Reference', access: 'public', idempotent: true,
    summary: "Redoc's standalone bundle, for /docs",
    responses: { 200: { description: 'The script (from the `redoc` package).', body: Joi.string(), contentType: 'text/javascript' } },
  }),
] as const;
