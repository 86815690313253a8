import type { NextFunction, Request, Response } from 'express';
import { ROUTES, type RouteDeclaration } from '@teamchat/contract';
import {
  AuthenticationNotConfirmed, actorFromMembership, authenticateSecretHash, authenticationToConfirm, errors, forgetAuthentication,
  rememberAuthentication, rememberedAuthentication, touchCredentialIfDue, type Actor, type AuthenticationToConfirm,
} from '@teamchat/core';
import { checkScope, enterAccount } from './account';
import { depsOf, locals } from './locals';

/**
 * Routes authenticated from memory (docs/api.md "Authentication from memory"): a message post
 * without an Idempotency-Key and a page of a channel's messages, the two hottest routes, each
 * served by one statement that can carry the check. The API host remembers a credential's
 * authentication in an account once a request of these routes passed a full authentication and
 * the account's checks; its next such requests to that account skip the authentication round
 * trip, and:
 * - the route's statement writes or reads only if what the authentication decided on still holds
 *   (`AuthenticationToConfirm`); when it does not, nothing is written or read, and the request is
 *   authenticated in full and run again (or refused as a full authentication refuses it);
 * - any other answer (a refusal of the input, a limit, a channel the caller cannot use) is
 *   given only after a full authentication, whose refusal it becomes if there is one;
 * - every other route authenticates in full before it runs (`confirmBeforeRoute`).
 */

/**
 * The routes served from memory, by id: the router lets only these skip `confirmBeforeRoute`, so
 * each one's handler must run its statement through runConfirmingAuthentication. A route added
 * here needs its request in the test "every route served from memory confirms the authentication
 * it remembered" (remembered-auth.test.ts), which fails until it is there and refuses it after a
 * revocation.
 */
export const ROUTES_FROM_MEMORY: ReadonlySet<string> = new Set(['postMessage', 'listMessages']);

/**
 * Their method, scope and path, from their declarations (packages/contract): the path as the
 * router matches it (each `{param}` one segment, a trailing slash allowed, any case).
 */
const FROM_MEMORY = (ROUTES as readonly RouteDeclaration[]).filter((r) => ROUTES_FROM_MEMORY.has(r.id)).map((r) => ({
  method: r.method,
  scope: r.scope!,
  path: new RegExp(`^${r.path.replace(/\{[^}]+\}/g, '[^/]+')}/?$`, 'i'),
}));

/** The route of this request if it may be authenticated from memory (a post only without an Idempotency-Key). */
function routeFromMemory(req: Request): (typeof FROM_MEMORY)[number] | undefined {
  if (req.method === 'POST' && req.get('idempotency-key') !== undefined) return undefined;
  return FROM_MEMORY.find((r) => r.method === req.method && r.path.test(req.path));
}

/**
 * Called by the API host's authentication with the secret's hash: true when the request was
 * authenticated from memory (still to be confirmed); false to authenticate in full.
 */
export function authenticateFromMemory(req: Request, res: Response, secretHash: string, accountId: string | undefined): boolean {
  if (accountId === undefined) return false;
  const route = routeFromMemory(req);
  if (!route) return false;
  const l = locals(res);
  l.rememberable = { secretHash, accountId, scope: route.scope };
  const entry = rememberedAuthentication(secretHash, accountId);
  if (!entry) return false;
  const deps = depsOf(req);
  const now = deps.now();
  if (touchCredentialIfDue(deps.database.db, entry.auth.principal.id, entry.touchedAt, now)) entry.touchedAt = now.getTime();
  l.principal = entry.auth.principal;
  l.membership = entry.auth.membership;
  l.unconfirmed = entry;
  return true;
}

/**
 * Authenticates the request in full (the remembered authentication is set aside) and runs the
 * checks every route under the account runs, and `scope`'s; the remembered entry is replaced
 * with what was found, or forgotten. Answers the actor.
 */
async function authenticateInFull(req: Request, res: Response, scope: string | undefined): Promise<Actor> {
  const l = locals(res);
  const { secretHash, accountId } = l.rememberable!;
  l.unconfirmed = undefined;
  const deps = depsOf(req);
  const found = await authenticateSecretHash(deps.database.db, secretHash, deps.now(), accountId);
  forgetAuthentication(secretHash, accountId);
  if (!found) throw errors.credentialRefused();
  l.principal = found.principal;
  l.membership = found.membership;
  enterAccount(req, res, actorFromMembership(found.principal, found.membership!, l.requestId));
  if (scope) checkScope(l.actor!, scope);
  remember(req, res);
  return l.actor!;
}

/**
 * Runs the one statement of a route served from memory (`run`, given the actor and what the
 * statement must confirm, if anything). A request authenticated from memory whose statement found
 * the authentication changed wrote and read nothing: it is authenticated in full and run once
 * more. A request authenticated in full is remembered.
 */
export async function runConfirmingAuthentication<T>(
  req: Request, res: Response, actor: Actor, run: (actor: Actor, confirm?: AuthenticationToConfirm) => Promise<T>,
): Promise<T> {
  const l = locals(res);
  const entry = l.unconfirmed;
  if (!entry) {
    remember(req, res);
    return run(actor);
  }
  try {
    const out = await run(actor, authenticationToConfirm(entry, depsOf(req).now()));
    l.unconfirmed = undefined;
    return out;
  } catch (err) {
    if (!(err instanceof AuthenticationNotConfirmed)) throw err;
  }
  return run(await authenticateInFull(req, res, l.rememberable!.scope));
}

/**
 * Remembers the full authentication of a request that may be served from memory, once it passed
 * the account's checks and its route's scope.
 */
function remember(req: Request, res: Response): void {
  const l = locals(res);
  const m = l.membership;
  if (!l.rememberable || !l.principal || !m?.account || !m.role || !m.identityId) return;
  rememberAuthentication(l.rememberable.secretHash, l.rememberable.accountId, {
    auth: { principal: l.principal, membership: m },
    touchedAt: depsOf(req).now().getTime(),
  });
}

/** Every route not served from memory: a request authenticated from memory is authenticated in full first. */
export function confirmBeforeRoute(req: Request, res: Response, next: NextFunction): void | Promise<void> {
  if (!locals(res).unconfirmed) return next();
  return authenticateInFull(req, res, undefined).then(() => next());
}

/**
 * Error middleware, before the error handler: an error answered to a request authenticated from
 * memory and not yet confirmed is answered only after a full authentication, and is replaced by
 * that authentication's refusal when there is one.
 */
export async function confirmBeforeAnswering(err: unknown, req: Request, res: Response, next: NextFunction): Promise<void> {
  if (!locals(res).unconfirmed || res.headersSent) return next(err);
  try {
    await authenticateInFull(req, res, locals(res).rememberable!.scope);
  } catch (refusal) {
    return next(refusal);
  }
  next(err);
}
