import { route } from '../route';
import {
  addMemberBody, approvalParams, channelParams, createChannelBody, listQuerySchema, messageParams, openDmBody, patchChannelBody,
  patchMessageBody, postMessageBody, reactionParams, searchQuery, threadParams,
} from '../schemas/requests';
import { approvalDecisionView, approvalView, channelMemberView, channelView, messageView, pageOf, reactionResult, searchHitView } from '../schemas/views';

const A = '/accounts/{accountId}';
const CH = `${A}/channels/{channelId}`;
const MSG = `${CH}/messages/{ts}`;
const read = { access: 'credential', scope: 'channels:read' } as const;
const write = { access: 'credential', scope: 'channels:write' } as const;
/** A channel the caller cannot read: 404 for a DM or an unknown id, 403 not_a_member for a channel. */
const inChannel = { not_found: [], not_a_member: [] } as const;

/** Channels, messages, threads, reactions, direct messages, approvals and search (spec: Channels, Messages, Direct messages). */
export const messagingRoutes = [
  route({
    id: 'listMessages', method: 'GET', path: `${CH}/messages`, tag: 'Messages', ...read, idempotent: true, list: true,
    summary: "Read a channel's messages",
    description: "Newest first; thread replies are not included (each root shows `reply_count`). DMs too: a DM is a channel.",
    request: { params: channelParams, query: listQuerySchema },
    responses: { 200: { description: 'A page of messages.', body: pageOf(messageView, 'Message') } },
    errors: inChannel,
  }),
  route({
    id: 'postMessage', method: 'POST', path: `${CH}/messages`, tag: 'Messages', ...write, creating: true, idempotent: false,
    summary: 'Post a message',
    description: 'Accepts `client_ref`, echoed back. A reply names its root in `thread_ts`. A post through an MCP session records the session.',
    request: { params: channelParams, body: postMessageBody },
    responses: { 201: { description: 'The message.', body: messageView, headers: ['ETag', 'Idempotent-Replayed'] } },
    errors: inChannel,
  }),
  route({
    id: 'editMessage', method: 'PATCH', path: MSG, tag: 'Messages', ...write, idempotent: true, ifMatch: true,
    summary: 'Edit a message',
    description: 'Only its author, or an owner or admin. Send `If-Match` (the ETag) or `version`: 409 `edit_conflict` if it changed since.',
    request: { params: messageParams, body: patchMessageBody },
    responses: { 200: { description: 'The edited message.', body: messageView, headers: ['ETag'] } },
    errors: { ...inChannel, forbidden: ['not_author'], edit_conflict: [] },
  }),
  route({
    id: 'deleteMessage', method: 'DELETE', path: MSG, tag: 'Messages', ...write, idempotent: true,
    summary: 'Delete a message',
    description: 'From a web session: deleted (204). Through a credential: 403 `confirmation_required` with `approval_url`, '
      + 'which a person opens to approve it (spec: Authentication 10).',
    request: { params: messageParams },
    responses: { 204: { description: 'Deleted.' } },
    errors: { ...inChannel, forbidden: ['not_author'], confirmation_required: [] },
  }),
  route({
    id: 'readThread', method: 'GET', path: `${CH}/threads/{threadTs}`, tag: 'Messages', ...read, idempotent: true, list: true,
    summary: 'Read a thread',
    description: 'Its root message first, then the replies oldest first.',
    request: { params: threadParams, query: listQuerySchema },
    responses: { 200: { description: 'A page of the thread.', body: pageOf(messageView, 'Message') } },
    errors: inChannel,
  }),
  route({
    id: 'addReaction', method: 'PUT', path: `${MSG}/reactions/{emoji}`, tag: 'Messages', ...write, idempotent: true,
    summary: 'Add a reaction',
    responses: {
      201: { description: 'Added.', body: reactionResult },
      200: { description: 'The caller had already added it: nothing changed.', body: reactionResult },
    },
    request: { params: reactionParams },
    errors: inChannel,
  }),
  route({
    id: 'removeReaction', method: 'DELETE', path: `${MSG}/reactions/{emoji}`, tag: 'Messages', ...write, idempotent: true,
    summary: "Remove the caller's reaction",
    request: { params: reactionParams },
    responses: { 204: { description: 'Removed (or there was none).' } },
    errors: inChannel,
  }),
  route({
    id: 'listChannels', method: 'GET', path: `${A}/channels`, tag: 'Channels', ...read, idempotent: true, list: true,
    summary: 'List channels visible to the caller',
    request: { query: listQuerySchema },
    responses: { 200: { description: 'A page of channels.', body: pageOf(channelView, 'Channel') } },
  }),
  route({
    id: 'createChannel', method: 'POST', path: `${A}/channels`, tag: 'Channels', ...write, creating: true, idempotent: false,
    summary: 'Create a channel',
    request: { body: createChannelBody },
    responses: { 201: { description: 'The channel.', body: channelView, headers: ['ETag', 'Idempotent-Replayed'] } },
    errors: { invalid_request: ['name_taken'] },
  }),
  route({
    id: 'getChannel', method: 'GET', path: CH, tag: 'Channels', ...read, idempotent: true,
    summary: 'Get one channel',
    request: { params: channelParams },
    responses: { 200: { description: 'The channel.', body: channelView, headers: ['ETag'] } },
    errors: inChannel,
  }),
  route({
    id: 'updateChannel', method: 'PATCH', path: CH, tag: 'Channels', ...write, idempotent: true, ifMatch: true,
    summary: 'Rename a channel or change its topic',
    request: { params: channelParams, body: patchChannelBody },
    responses: { 200: { description: 'The channel.', body: channelView, headers: ['ETag'] } },
    errors: { ...inChannel, forbidden: ['dm'], stale: [], invalid_request: ['name_taken'] },
  }),
  route({
    id: 'listChannelMembers', method: 'GET', path: `${CH}/members`, tag: 'Channels', ...read, idempotent: true, list: true,
    summary: "List a channel's members",
    request: { params: channelParams, query: listQuerySchema },
    responses: { 200: { description: 'A page of members, in the order they joined.', body: pageOf(channelMemberView, 'ChannelMember') } },
    errors: inChannel,
  }),
  route({
    id: 'addChannelMember', method: 'POST', path: `${CH}/members`, tag: 'Channels', ...write, creating: true, idempotent: false,
    summary: 'Add a member to a channel',
    request: { params: channelParams, body: addMemberBody },
    responses: {
      201: { description: 'Added.', body: channelMemberView, headers: ['Idempotent-Replayed'] },
      200: { description: 'Already a member.', body: channelMemberView, headers: ['Idempotent-Replayed'] },
    },
    errors: { ...inChannel, forbidden: ['dm'] },
  }),
  route({
    id: 'listDms', method: 'GET', path: `${A}/dms`, tag: 'Direct messages', ...read, idempotent: true, list: true,
    summary: "List the caller's direct messages",
    request: { query: listQuerySchema },
    responses: { 200: { description: 'A page of direct messages.', body: pageOf(channelView, 'Channel') } },
  }),
  route({
    id: 'openDm', method: 'POST', path: `${A}/dms`, tag: 'Direct messages', ...write, creating: true, idempotent: false,
    summary: 'Open a direct message',
    description: 'Post and read it through /channels/{channelId}/messages. Opening the same member set again answers 200 with the existing DM.',
    request: { body: openDmBody },
    responses: {
      201: { description: 'Opened.', body: channelView, headers: ['ETag', 'Idempotent-Replayed'] },
      200: { description: 'It was already open.', body: channelView, headers: ['ETag', 'Idempotent-Replayed'] },
    },
    errors: { invalid_request: ['already_exists'] },
  }),
  route({
    id: 'listPendingApprovals', method: 'GET', path: `${A}/approvals`, tag: 'Approvals', access: 'web_session', idempotent: true,
    summary: 'The pending approvals the caller may decide',
    description: 'Newest first, at most 100 (they expire within 24 hours); one page, `next_cursor` is always null, '
      + 'so a `cursor` sent here is foreign to it: 400 `invalid_cursor`.',
    responses: { 200: { description: 'The approvals.', body: pageOf(approvalView, 'Approval') } },
    errors: { invalid_cursor: [] },
  }),
  route({
    id: 'getApproval', method: 'GET', path: `${A}/approvals/{approvalId}`, tag: 'Approvals', access: 'web_session', idempotent: true,
    summary: 'See what a credential asked to destroy, and who asked',
    request: { params: approvalParams },
    responses: { 200: { description: 'The approval.', body: approvalView } },
    errors: { not_found: [] },
  }),
  ...(['approve', 'deny'] as const).map((decision) => route({
    id: decision === 'approve' ? 'approveApproval' : 'denyApproval', method: 'POST', path: `${A}/approvals/{approvalId}/${decision}`,
    tag: 'Approvals', access: 'web_session', idempotent: false,
    summary: decision === 'approve' ? 'Approve: the step runs as a background job' : 'Deny',
    request: { params: approvalParams },
    responses: decision === 'approve'
      ? { 202: { description: 'Approved: follow `job_url`.', body: approvalDecisionView } }
      : { 200: { description: 'Denied.', body: approvalDecisionView } },
    errors: { not_found: [], forbidden: ['expired', 'already_decided', 'not_author', 'approver_lost_rights'] },
  })),
  route({
    id: 'searchMessages', method: 'GET', path: `${A}/search`, tag: 'Search', access: 'web_session', idempotent: true, list: true,
    summary: 'Search messages',
    description: 'Messages of channels the caller can read, by relevance or newest first, filtered by channel, author and time. '
      + 'The query, filters and sort are part of the list: a cursor from another search is foreign.',
    request: { query: searchQuery },
    responses: { 200: { description: 'A page of hits: each message with a highlighted excerpt.', body: pageOf(searchHitView, 'SearchHit') } },
  }),
] as const;
