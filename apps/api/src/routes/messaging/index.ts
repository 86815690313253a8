import { Router } from 'express';
import { channelsRouter } from './channels';
import { dmsRouter } from './dms';
import { messagesRouter } from './messages';

export { approvalsRouter } from './approvals';

/** Channels, messages, threads, reactions and DMs under /accounts/{accountId}. */
export function messagingRouter(): Router {
  const router = Router({ mergeParams: true });
  router.use(channelsRouter());
  router.use(messagesRouter());
  router.use(dmsRouter());
  return router;
}
