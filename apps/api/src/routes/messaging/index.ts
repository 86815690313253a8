import type { Router } from 'express';
import { channelsRouter } from './channels';
import { dmsRouter } from './dms';
import { messagesRouter } from './messages';
import { approvalsRouter } from './approvals';

/**
 * Channels, messages, threads, reactions, DMs and approvals under /accounts/{accountId}: the
 * routers themselves, for the account router to mount side by side (`account.use(messagingRouters())`).
 * Not wrapped in one more Router: each nesting level costs every request that crosses it a
 * router dispatch (url re-parse, params merge, prefix trim and restore; the post's profile in docs/performance.md).
 */
export function messagingRouters(): Router[] {
  // Messages first: the hottest routes (the paths do not overlap).
  return [messagesRouter(), channelsRouter(), dmsRouter(), approvalsRouter()];
}
