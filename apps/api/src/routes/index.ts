import { Router, type RequestHandler } from 'express';
import {
  ACCOUNT_PREFIX, REFUSALS, ROUTES, expressPath, hostsOf, isAccountRoute, type Host, type RouteDeclaration, type RouteId,
} from '@teamchat/contract';
import { accountContext, requireScope, requireWebSession } from '../http/account';
import { authenticateWebHost, wrongHost } from '../http/authenticate';
import { isCreatingHandler } from '../http/create';
import { notFoundHandler } from '../http/error-handler';
import { enforceLimits } from '../http/limits';
import { depsOf } from '../http/locals';
import { validate } from '../http/validate';
import { ROUTES_FROM_MEMORY, confirmBeforeRoute } from '../http/remembered-auth';
import { accountHandlers } from './account';
import { authHandlers } from './auth';
import { directoryHandlers } from './directory';
import { probeHandlers } from './health';
import { operationsHandlers } from './jobs';
import { messagingHandlers } from './messaging';
import { referenceHandlers } from './reference';
import { searchHandlers } from './search';
import { deliveryHandlers } from './webhooks/deliveries';
import { endpointHandlers } from './webhooks/endpoints';
import { webhookConsoleHandlers } from './webhooks/console';
import { filesHandlers } from './files';
import { uploadTargetHandlers } from './upload-target';
import { mirrorsHandlers } from './mirrors';
import { apiKeysHandlers } from './api-keys';
import { usageHandlers } from './usage';
import { approvalsListHandlers } from './approvals-list';

/** Every declared route's handler: a declaration without one (or one without a declaration) stops the build. */
const HANDLERS: Record<RouteId, RequestHandler> = {
  ...probeHandlers, ...authHandlers, ...messagingHandlers, ...accountHandlers, ...directoryHandlers, ...operationsHandlers,
  ...searchHandlers, ...endpointHandlers, ...deliveryHandlers, ...referenceHandlers, ...webhookConsoleHandlers,
  ...filesHandlers, ...uploadTargetHandlers, ...mirrorsHandlers, ...apiKeysHandlers, ...usageHandlers, ...approvalsListHandlers,
};

/** The refusals' handlers (packages/contract `REFUSALS`). */
const REFUSAL_HANDLERS: Record<string, RequestHandler> = {
  // Metrics are for the operations port only: 404 here before any credential is asked for.
  metricsNotHere: notFoundHandler,
  authOnApiHost: (req) => {
    throw wrongHost('web', depsOf(req).config.publicWebUrl);
  },
};

/** Where a route is mounted in the app (apps/api app.ts): before the body parser, before authentication, or after it. */
export type Stage = 'probes' | 'auth' | 'accounts';
const stageOf = (path: string): Stage => (path.startsWith('/auth/') ? 'auth' : path.startsWith('/accounts/') ? 'accounts' : 'probes');

/** The checks a declaration names, in the order every route runs them: web session only, then scope, then input. */
function chain(r: RouteDeclaration, handler: RequestHandler): RequestHandler[] {
  if (Boolean(r.creating) !== isCreatingHandler(handler)) {
    throw new Error(`route ${r.id}: declared ${r.creating ? '' : 'not '}creating, but its handler is ${r.creating ? 'not ' : ''}built with creating()`);
  }
  // Only the routes served from memory confirm a remembered authentication themselves; every
  // other route authenticates in full first.
  const out: RequestHandler[] = ROUTES_FROM_MEMORY.has(r.id) ? [] : [confirmBeforeRoute];
  if (r.access === 'web_session') out.push(isAccountRoute(r) ? requireWebSession : authenticateWebHost);
  if (r.scope) out.push(requireScope(r.scope));
  if (r.request) out.push(validate(r.request));
  out.push(handler);
  return out;
}

const METHOD = { GET: 'get', POST: 'post', PATCH: 'patch', PUT: 'put', DELETE: 'delete' } as const;

/**
 * The routers of one host, built from the route declarations (packages/contract): a route cannot
 * be served without its declaration. Everything under /accounts/{accountId} first resolves the
 * actor and the account's state, then spends the seat's limits; authentication (the host's
 * policy) runs before the `accounts` router.
 */
export function buildRouters(host: Host): Record<Stage, Router> {
  const known = new Set<string>(ROUTES.map((r) => r.id));
  for (const id of Object.keys(HANDLERS)) if (!known.has(id)) throw new Error(`handler ${id} has no route declaration`);

  const probes = Router();
  const auth = Router();
  const account = Router({ mergeParams: true });
  account.use(accountContext);
  account.use(enforceLimits);
  const routers = { probes, auth, accounts: account } as const;

  for (const r of ROUTES as readonly RouteDeclaration[]) {
    if (!hostsOf(r).includes(host)) continue;
    const handler = HANDLERS[r.id as RouteId];
    if (!handler) throw new Error(`route ${r.id} has no handler`);
    const stage = stageOf(r.path);
    const path = stage === 'accounts' && isAccountRoute(r) ? expressPath(r.path.slice(ACCOUNT_PREFIX.length)) || '/' : expressPath(r.path);
    routers[stage][METHOD[r.method]](path, ...chain(r, handler));
  }
  for (const refusal of REFUSALS) {
    if (refusal.hosts.includes(host)) routers[stageOf(refusal.path)].all(refusal.path, REFUSAL_HANDLERS[refusal.id]);
  }

  const accounts = Router();
  accounts.use(expressPath(ACCOUNT_PREFIX), account);
  return { probes, auth, accounts };
}
