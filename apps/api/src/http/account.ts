import type { NextFunction, Request, Response } from 'express';
import { AppError, accountStateError, actorFromMembership, errors, resolveActor, type AccountRow, type Actor } from '@teamchat/core';
import { actorOf, depsOf, locals } from './locals';

const ACCOUNT_ID = /^acct_[a-z0-9]{1,64}$/;
const ACCOUNT_PATH = /^\/accounts\/(acct_[a-z0-9]{1,64})(?:\/|$)/;

/** The account a request's path acts in, for authentication to read the caller's seat in the same round trip. */
export function accountIdInPath(req: Request): string | undefined {
  return ACCOUNT_PATH.exec(req.path)?.[1];
}

/**
 * First middleware under /accounts/{accountId}: resolves the actor (from the seat read with the
 * credential, else with one query), then the account's state.
 */
export async function accountContext(req: Request, res: Response, next: NextFunction): Promise<void> {
  const l = locals(res);
  const accountId = req.params.accountId as string;
  if (!ACCOUNT_ID.test(accountId)) throw errors.notFound('account');
  enterAccount(req, res, l.membership?.accountId === accountId
    ? actorFromMembership(l.principal!, l.membership, l.requestId)
    : await resolveActor(depsOf(req).database.db, l.principal!, accountId, l.requestId));
  next();
}

/**
 * The caller's actor in the account, and the checks every route under an account runs first:
 * the account's state, then a read-only credential on a write.
 */
export function enterAccount(req: Request, res: Response, { account, actor }: { account: AccountRow; actor: Actor }): void {
  const l = locals(res);
  l.account = account;
  l.actor = actor;
  // Spec: a read-only or suspended account answers every route under it, reads included.
  const stateError = accountStateError(account.state);
  if (stateError) throw stateError;
  // A read-only credential changes nothing, whatever its scopes: every route but a read answers
  // insufficient_scope before any route runs (docs/api.md "Read-only credentials").
  if (actor.principal.readOnly && !READ_METHODS.has(req.method)) throw errors.readOnlyCredential();
}

/** The methods that only read. Every non-GET route under an account changes something (none only reads). */
const READ_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** Needs `scope`: a credential without it gets insufficient_scope; a web session whose role lacks it, forbidden. */
export function requireScope(scope: string) {
  return (_req: Request, res: Response, next: NextFunction) => {
    checkScope(actorOf(res), scope);
    next();
  };
}

export function checkScope(actor: Actor, scope: string): void {
  if (actor.scopes.has(scope)) return;
  if (actor.principal.via === 'web_session') throw new AppError('forbidden', `A ${actor.role} may not do this.`, { reason: 'role' });
  throw errors.insufficientScope(scope);
}

/** Endpoints the spec marks "web session only". */
export function requireWebSession(_req: Request, res: Response, next: NextFunction): void {
  if (locals(res).principal?.via !== 'web_session') {
    throw errors.webSessionRequired('This endpoint is available only to a signed-in person on the web host.');
  }
  next();
}
