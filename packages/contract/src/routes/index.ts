import type { Refusal, RouteDeclaration } from '../route';
import { accountRoutes } from './account';
import { authRoutes } from './auth';
import { messagingRoutes } from './messaging';
import { probeRoutes } from './probes';
import { webhookRoutes } from './webhooks';
import { fileRoutes } from './files';
import { mirrorRoutes } from './mirrors';

/**
 * Every route of both public hosts, in the order the router tries them (the hot message routes
 * first among the account's; the paths do not overlap).
 */
export const ROUTES = [
  ...probeRoutes, ...authRoutes, ...messagingRoutes, ...accountRoutes, ...webhookRoutes, ...fileRoutes, ...mirrorRoutes,
] as const satisfies readonly RouteDeclaration[];

export type RouteId = (typeof ROUTES)[number]['id'];

const byId = new Map<string, RouteDeclaration>(ROUTES.map((r) => [r.id, r]));

/** The declaration of a route, by id (throws on an unknown id: a programming error). */
export function routeNamed(id: RouteId): RouteDeclaration {
  const r = byId.get(id);
  if (!r) throw new Error(`no route ${id}`);
  return r;
}

/** Paths answered with a refusal, not an operation (see `Refusal`). */
export const REFUSALS: readonly Refusal[] = [
  { id: 'metricsNotHere', path: '/metrics', hosts: ['api', 'web'] },
  { id: 'authOnApiHost', path: '/auth/{*rest}', hosts: ['api'] },
];
