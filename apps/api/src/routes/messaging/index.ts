import { approvalHandlers } from './approvals';
import { channelHandlers } from './channels';
import { dmHandlers } from './dms';
import { messageHandlers } from './messages';

/** Channels, messages, threads, reactions, DMs and approvals under /accounts/{accountId}. */
export const messagingHandlers = { ...messageHandlers, ...channelHandlers, ...dmHandlers, ...approvalHandlers };
