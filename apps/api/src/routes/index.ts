import { Router } from 'express';
import { accountContext } from '../http/account';
import { enforceLimits } from '../http/limits';
import { accountRouter } from './account';
import { directoryRouter } from './directory';
import { filesRouter } from './files';
import { operationsRouter } from './jobs';
import { messagingRouters } from './messaging';
import { mirrorsRouter } from './mirrors';
import { searchRouter } from './search';
import { webhookDeliveriesRouter } from './webhooks/deliveries';
import { webhookEndpointsRouter } from './webhooks/endpoints';
import { webhookConsoleRouter } from './webhooks/console';
import { apiKeysRouter } from './api-keys';
import { usageRouter } from './usage';
import { approvalsListRouter } from './approvals-list';

/**
 * The ONE router tree both hosts serve; authentication (the host's policy) runs before it.
 * Everything under /accounts/{accountId} first resolves the actor and the account's state,
 * then spends the seat's limits.
 */
export function buildRouter(): Router {
  const account = Router({ mergeParams: true });
  account.use(accountContext);
  account.use(enforceLimits);
  // The hot routes first: Express tries each router in turn (the paths do not overlap).
  account.use(messagingRouters());
  account.use(accountRouter());
  account.use(directoryRouter());
  account.use(operationsRouter());
  account.use(searchRouter());
  account.use(filesRouter());
  account.use(webhookDeliveriesRouter());
  account.use(webhookEndpointsRouter());
  // The web app's additive routes (docs/web.md).
  account.use(webhookConsoleRouter());
  account.use(apiKeysRouter());
  account.use(usageRouter());
  account.use(approvalsListRouter());
  account.use(mirrorsRouter());

  const root = Router();
  root.use('/accounts/:accountId', account);
  return root;
}
