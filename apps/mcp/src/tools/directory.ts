import { z } from 'zod/v4';
import { GRANTABLE_SCOPES } from '@teamchat/core';
import { defineTool, fields, pageQuery, reads, writes, type ToolDef } from './define';

const MI = 'Members and identities' as const;

/** Members (members:manage) and identities (identities:manage). */
export const directoryTools: ToolDef[] = [
  defineTool({
    name: 'list_members', title: 'List account members', toolset: MI, route: 'listMembers',
    description: 'Lists the people of the account with their role and identity id, oldest first.',
    annotations: reads,
    input: { limit: fields.limit, cursor: fields.cursor },
    call: (api, accountId, a) => api.GET('/accounts/{accountId}/members', { params: { path: { accountId }, query: pageQuery(a) } }),
  }),
  defineTool({
    name: 'list_identities', title: 'List identities', toolset: MI, route: 'listIdentities',
    description: "Lists the account's identities, people's and agents', oldest first. Use an identity's id to mention it (<@id>) or open a direct message.",
    annotations: reads,
    input: { limit: fields.limit, cursor: fields.cursor },
    call: (api, accountId, a) => api.GET('/accounts/{accountId}/identities', { params: { path: { accountId }, query: pageQuery(a) } }),
  }),
  defineTool({
    name: 'register_agent', title: 'Register an agent identity', toolset: MI, route: 'registerAgent',
    description: "Registers a new agent identity approved by this credential's person; the result holds the agent's token, shown only this once. The new agent spends that person's seat.",
    annotations: writes(),
    input: {
      name: z.string().min(1).max(80).describe('Display name of the agent.'),
      scopes: z.array(z.enum([...GRANTABLE_SCOPES, 'channels:read', 'channels:write'] as const)).max(32).optional()
        .describe('Scopes for the agent beyond channels:read and channels:write (always granted).'),
      client_ref: fields.clientRef, idempotency_key: fields.idempotencyKey,
    },
    call: (api, accountId, a) => api.POST('/accounts/{accountId}/identities', {
      params: { path: { accountId }, header: { 'Idempotency-Key': a.idempotency_key } },
      body: { name: a.name, scopes: a.scopes, client_ref: a.client_ref },
    }),
  }),
];
