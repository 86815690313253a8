import { Router } from 'express';
import { channelsRouter } from './channels';
import { dmsRouter } from './dms';
import { messagesRouter } from './messages';
import { approvalsRouter } from './approvals';

/** Channels, messages, threads, reactions, DMs and approvals under /accounts/{accountId}. */
export function messagingRouter(): Router {
  const router = Router({ mergeParams: true });
  router.use(channelsRouter());
  router.use(messagesRouter());
  router.use(dmsRouter());
  router.use(approvalsRouter());
  return router;
}
