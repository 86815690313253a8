import type { NextFunction, Request, Response } from 'express';
import { ROUTES, type RouteDeclaration } from '@teamchat/contract';
import {
  AuthenticationNotConfirmed, actorFromMembership, authenticateSecretHash, authenticationToConfirm, errors, forgetAuthentication,
  rememberAuthentication, rememberedAuthentication, touchCredentialIfDue, type Actor, type AuthenticationToConfirm,
} from '@teamchat/core';
import { checkScope, enterAccount } from './account';
import { depsOf, locals } from './locals';

/**
 * A message post authenticated from memory (docs/api.md "Authentication of a post"). The API
 * host remembers a credential's authentication in an account once a post of its passed a full
 * authentication and the account's checks; its next posts to that account skip the
 * authentication round trip, and:
 * - the post statement writes only if what the authentication decided on still holds
 *   (`AuthenticationToConfirm`); when it does not, nothing is written, and the post is
 *   authenticated in full and made again (or refused as a full authentication refuses it);
 * - any other answer (a refusal of the input, a limit, a channel the caller cannot post in) is
 *   given only after a full authentication, whose refusal it becomes if there is one;
 * - every other route authenticates in full before it runs (`confirmBeforeRoute`).
 * Only a post without an Idempotency-Key is served so: it is the one request whose write can carry
 * the check in its own statement.
 */

/** The route served from memory, its path as the API host's router matches it. */
const POST_MESSAGE_SCOPE = (ROUTES as readonly RouteDeclaration[]).find((r) => r.id === 'postMessage')!.scope;
const POST_MESSAGE_PATH = /^\/accounts\/acct_[a-z0-9]{1,64}\/channels\/[^/]+\/messages\/?$/i;

/** Whether this request's authentication may come from memory, and be remembered. */
function servedFromMemory(req: Request, accountId: string | undefined): accountId is string {
  return accountId !== undefined && req.method === 'POST' && req.get('idempotency-key') === undefined && POST_MESSAGE_PATH.test(req.path);
}

/**
 * Called by the API host's authentication with the secret's hash: true when the request was
 * authenticated from memory (still to be confirmed); false to authenticate in full.
 */
export function authenticateFromMemory(req: Request, res: Response, secretHash: string, accountId: string | undefined): boolean {
  if (!servedFromMemory(req, accountId)) return false;
  const l = locals(res);
  l.rememberable = { secretHash, accountId };
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
  if (!found) throw errors.unauthorized('The credential is unknown, expired or revoked.');
  l.principal = found.principal;
  l.membership = found.membership;
  enterAccount(req, res, actorFromMembership(found.principal, found.membership!, l.requestId));
  if (scope) checkScope(l.actor!, scope);
  remember(req, res);
  return l.actor!;
}

/**
 * Runs a post (`post`, given the actor and what its statement must confirm, if anything). A post
 * authenticated from memory whose statement found the authentication changed wrote nothing: it is
 * authenticated in full and made once more. A post authenticated in full that succeeds is
 * remembered.
 */
export async function postConfirmingAuthentication<T>(
  req: Request, res: Response, actor: Actor, post: (actor: Actor, confirm?: AuthenticationToConfirm) => Promise<T>,
): Promise<T> {
  const l = locals(res);
  const entry = l.unconfirmed;
  if (!entry) {
    remember(req, res);
    return post(actor);
  }
  try {
    const out = await post(actor, authenticationToConfirm(entry, depsOf(req).now()));
    l.unconfirmed = undefined;
    return out;
  } catch (err) {
    if (!(err instanceof AuthenticationNotConfirmed)) throw err;
  }
  return post(await authenticateInFull(req, res, POST_MESSAGE_SCOPE));
}

/**
 * Remembers the full authentication of a request that may be served from memory, once it passed
 * the account's checks and the post's scope.
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

/** Every route but the post: a request authenticated from memory is authenticated in full first. */
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
    await authenticateInFull(req, res, POST_MESSAGE_SCOPE);
  } catch (refusal) {
    return next(refusal);
  }
  next(err);
}
