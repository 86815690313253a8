// Messaging domain: channels, messages, threads, reactions, DMs, approvals. Their outbox rows are
// built by ../events (the one owner of event rows and bodies).
export * from './ts';
export * from './mentions';
export * from './content';
export * from './access';
export * from './views';
export * from './channels/create-channel';
export * from './channels/update-channel';
export * from './channels/list-channels';
export * from './channels/members';
export * from './channels/dms';
export * from './messages/load';
export * from './messages/post-message';
export { MAX_POSTS_PER_BATCH } from './messages/post-batch';
export * from './messages/edit-message';
export * from './messages/delete-message';
export * from './messages/list-messages';
export * from './messages/reactions';
export * from './approvals/job-types';
export * from './approvals/request-approval';
export * from './approvals/decide-approval';
// Registers the 'message.delete' job handler in the catalogue: the worker gets it by importing @teamchat/core.
export * from './approvals/delete-job';
export * from './approvals/list-approvals';
