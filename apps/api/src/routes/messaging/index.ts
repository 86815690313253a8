import { Router } from 'express';
import { channelsRouter } from './channels';
import { dmsRouter } from './dms';
import { messagesRouter } from './messages';
import { approvalsRouter } from './approvals';

/** Channels, messages, threads, reactions, DMs and approvals under /accounts/{accountId}. */
export function messagingRouter(): Router {
  const router = Router({ mergeParams: true });
  // Messages first: the hottest routes (the paths do not overlap).
  router.use(messagesRouter());
  router.use(channelsRouter());
  router.use(dmsRouter());
  router.use(approvalsRouter());
  return router;
}
