import { z } from 'zod/v4';
import { defineTool, destructive, fields, idOf, pageQuery, reads, writes, type ToolDef } from './define';

const CM = 'Channels and messages' as const;

/** Channels and messages, and direct messages (scopes channels:read and channels:write). */
export const messagingTools: ToolDef[] = [
  defineTool({
    name: 'list_channels', title: 'List channels', toolset: CM, route: 'listChannels',
    description: 'Lists the channels this identity can see, oldest first, a page at a time.',
    annotations: reads,
    input: { limit: fields.limit, cursor: fields.cursor },
    call: (api, accountId, a) => api.GET('/accounts/{accountId}/channels', { params: { path: { accountId }, query: pageQuery(a) } }),
  }),
  defineTool({
    name: 'read_history', title: 'Read channel history', toolset: CM, route: 'listMessages',
    description: "Reads a channel's (or a direct message's) messages, newest first; thread replies are not included (each root shows `reply_count`; use read_thread).",
    annotations: reads,
    input: { channel_id: fields.channelId, limit: fields.limit, cursor: fields.cursor },
    call: (api, accountId, a) => api.GET('/accounts/{accountId}/channels/{channelId}/messages', {
      params: { path: { accountId, channelId: a.channel_id }, query: pageQuery(a) },
    }),
  }),
  defineTool({
    name: 'read_thread', title: 'Read a thread', toolset: CM, route: 'readThread',
    description: 'Reads a thread: its root message first, then the replies oldest first.',
    annotations: reads,
    input: { channel_id: fields.channelId, thread_ts: fields.ts.describe("The thread root's `ts` (a reply's `thread_ts`)."), limit: fields.limit, cursor: fields.cursor },
    call: (api, accountId, a) => api.GET('/accounts/{accountId}/channels/{channelId}/threads/{threadTs}', {
      params: { path: { accountId, channelId: a.channel_id, threadTs: a.thread_ts }, query: pageQuery(a) },
    }),
  }),
  defineTool({
    name: 'post_message', title: 'Post a message', toolset: CM, route: 'postMessage',
    description: 'Posts a message to a channel or direct message as this identity. The message records this MCP session (client and version). Returns the message with its `ts`.',
    annotations: writes(),
    input: {
      channel_id: fields.channelId, text: fields.text, links: fields.links, attachments: fields.attachments,
      client_ref: fields.clientRef, idempotency_key: fields.idempotencyKey,
    },
    call: (api, accountId, a) => api.POST('/accounts/{accountId}/channels/{channelId}/messages', {
      params: { path: { accountId, channelId: a.channel_id }, header: { 'Idempotency-Key': a.idempotency_key } },
      body: { text: a.text, links: a.links, attachments: a.attachments, client_ref: a.client_ref },
    }),
  }),
  defineTool({
    name: 'reply_in_thread', title: 'Reply in a thread', toolset: CM, route: 'postMessage',
    description: 'Posts a reply in the thread of a message (replying to a reply joins the same thread). Records this MCP session like post_message.',
    annotations: writes(),
    input: {
      channel_id: fields.channelId, thread_ts: fields.ts.describe('`ts` of the message to reply to.'), text: fields.text,
      links: fields.links, attachments: fields.attachments, client_ref: fields.clientRef, idempotency_key: fields.idempotencyKey,
    },
    call: (api, accountId, a) => api.POST('/accounts/{accountId}/channels/{channelId}/messages', {
      params: { path: { accountId, channelId: a.channel_id }, header: { 'Idempotency-Key': a.idempotency_key } },
      body: { text: a.text, thread_ts: a.thread_ts, links: a.links, attachments: a.attachments, client_ref: a.client_ref },
    }),
  }),
  defineTool({
    name: 'edit_message', title: 'Edit a message', toolset: CM, route: 'editMessage',
    description: "Changes a message's text, links or attachments (only its author, or an owner or admin). Pass the `version` you read to be told `edit_conflict` if someone changed it since.",
    annotations: writes({ idempotentHint: true }),
    input: {
      channel_id: fields.channelId, ts: fields.ts, text: fields.text.optional(), links: fields.links, attachments: fields.attachments,
      version: z.number().int().min(1).optional().describe("The message's `version` when you read it; if it has changed since, the edit is refused with edit_conflict."),
    },
    call: (api, accountId, a) => api.PATCH('/accounts/{accountId}/channels/{channelId}/messages/{ts}', {
      params: { path: { accountId, channelId: a.channel_id, ts: a.ts } },
      body: { text: a.text, links: a.links, attachments: a.attachments, version: a.version },
    }),
  }),
  defineTool({
    name: 'add_reaction', title: 'React to a message', toolset: CM, route: 'addReaction',
    description: 'Adds an emoji reaction by this identity to a message. Adding one it already has changes nothing.',
    annotations: writes({ idempotentHint: true }),
    input: { channel_id: fields.channelId, ts: fields.ts, emoji: fields.emoji },
    call: (api, accountId, a) => api.PUT('/accounts/{accountId}/channels/{channelId}/messages/{ts}/reactions/{emoji}', {
      params: { path: { accountId, channelId: a.channel_id, ts: a.ts, emoji: a.emoji } },
    }),
  }),
  defineTool({
    name: 'remove_reaction', title: 'Remove a reaction', toolset: CM, route: 'removeReaction',
    description: "Removes this identity's emoji reaction from a message. Removing one it does not have changes nothing.",
    annotations: writes({ idempotentHint: true }),
    input: { channel_id: fields.channelId, ts: fields.ts, emoji: fields.emoji },
    call: (api, accountId, a) => api.DELETE('/accounts/{accountId}/channels/{channelId}/messages/{ts}/reactions/{emoji}', {
      params: { path: { accountId, channelId: a.channel_id, ts: a.ts, emoji: a.emoji } },
    }),
  }),
  defineTool({
    name: 'delete_message', title: 'Delete a message', toolset: CM, route: 'deleteMessage',
    description: 'Asks to delete a message (its author, or an owner or admin). Nothing is deleted yet: the result is `confirmation_required` with an `approval_url` that a person must open and approve; give them that link.',
    annotations: destructive({ idempotentHint: true }),
    input: { channel_id: fields.channelId, ts: fields.ts },
    call: (api, accountId, a) => api.DELETE('/accounts/{accountId}/channels/{channelId}/messages/{ts}', {
      params: { path: { accountId, channelId: a.channel_id, ts: a.ts } },
    }),
  }),
  defineTool({
    name: 'list_dms', title: 'List direct messages', toolset: 'Direct messages', route: 'listDms',
    description: "Lists this identity's direct messages, oldest first, with their members. Read and post in one with read_history and post_message.",
    annotations: reads,
    input: { limit: fields.limit, cursor: fields.cursor },
    call: (api, accountId, a) => api.GET('/accounts/{accountId}/dms', { params: { path: { accountId }, query: pageQuery(a) } }),
  }),
  defineTool({
    name: 'open_dm', title: 'Open a direct message', toolset: 'Direct messages', route: 'openDm',
    description: 'Opens a direct message with 1 to 8 other identities (people or agents), or returns the existing one with exactly those members. Post in it with post_message.',
    annotations: writes({ idempotentHint: true }),
    input: {
      members: z.array(idOf('identity')).min(1).max(8).describe('Identity ids (`idn_…`) of the other members, not including yourself.'),
      client_ref: fields.clientRef, idempotency_key: fields.idempotencyKey,
    },
    call: (api, accountId, a) => api.POST('/accounts/{accountId}/dms', {
      params: { path: { accountId }, header: { 'Idempotency-Key': a.idempotency_key } },
      body: { members: a.members, client_ref: a.client_ref },
    }),
  }),
];
