import { Router } from 'express';
import { accountContext } from '../http/account';
import { accountRouter } from './account';
import { directoryRouter } from './directory';
import { operationsRouter } from './jobs';

/**
 * The ONE router tree both hosts serve; authentication (the host's policy) runs before it.
 * Everything under /accounts/{accountId} first resolves the actor and the account's state.
 */
export function buildRouter(extraAccountRouters: Router[] = []): Router {
  const account = Router({ mergeParams: true });
  account.use(accountContext);
  account.use(accountRouter());
  account.use(directoryRouter());
  account.use(operationsRouter());
  for (const r of extraAccountRouters) account.use(r);

  const root = Router();
  root.use('/accounts/:accountId', account);
  return root;
}
