import type { NextFunction, Request, Response } from 'express';
import { AppError, accountStateError, errors, resolveActor } from '@teamchat/core';
import { actorOf, depsOf, locals } from './locals';

const ACCOUNT_ID = /^acct_[a-z0-9]{1,64}$/;

/** First middleware under /accounts/{accountId}: resolves the actor, then the account's state. */
export async function accountContext(req: Request, res: Response, next: NextFunction): Promise<void> {
  const l = locals(res);
  const accountId = req.params.accountId as string;
  if (!ACCOUNT_ID.test(accountId)) throw errors.notFound('account');
  const { account, actor } = await resolveActor(depsOf(req).database.db, l.principal!, accountId, l.requestId);
  l.account = account;
  l.actor = actor;
  // Spec: a read-only or suspended account answers every route under it, reads included.
  const stateError = accountStateError(account.state);
  if (stateError) throw stateError;
  next();
}

/** Needs `scope`: a credential without it gets insufficient_scope; a web session whose role lacks it, forbidden. */
export function requireScope(scope: string) {
  return (_req: Request, res: Response, next: NextFunction) => {
    const actor = actorOf(res);
    if (!actor.scopes.has(scope)) {
      if (actor.principal.via === 'web_session') {
        throw new AppError('forbidden', `A ${actor.role} may not do this.`, { reason: 'role' });
      }
      throw errors.insufficientScope(scope);
    }
    next();
  };
}

/** Endpoints the spec marks "web session only". */
export function requireWebSession(_req: Request, res: Response, next: NextFunction): void {
  if (locals(res).principal?.via !== 'web_session') {
    throw errors.webSessionRequired('This endpoint is available only to a signed-in person on the web host.');
  }
  next();
}
