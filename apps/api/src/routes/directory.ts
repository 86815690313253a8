import {
  claimAgentRegistration, createAgent, isWebSession, listCredentials, listIdentities, listMembers, toCredentialView, toIdentityView, toMemberView,
} from '@teamchat/core';
import { creating } from '../http/create';
import { depsOf } from '../http/locals';
import { listRequest, sendPage } from '../http/lists';
import type { HandlerMap } from './handlers';

/** Members, identities and API keys of the account. */
export const directoryHandlers = {
  listMembers: async (req, res) => {
    const page = listRequest<number>(req, res, 'members');
    const rows = await listMembers(depsOf(req).database.db, req.params.accountId as string, page);
    sendPage(req, res, 'members', rows, page.limit, toMemberView, (r) => r.seq);
  },

  listIdentities: async (req, res) => {
    const page = listRequest<number>(req, res, 'identities');
    const rows = await listIdentities(depsOf(req).database.db, req.params.accountId as string, page);
    sendPage(req, res, 'identities', rows, page.limit, toIdentityView, (r) => r.seq);
  },

  // Registers an agent identity approved by the caller's person; its token is shown only here.
  registerAgent: creating(async ({ tx, deps, actor, body }) => {
    // Agents per seat per day (docs/api.md "Agents per seat per day"), counted exactly in this transaction.
    await claimAgentRegistration(tx, deps.config, { accountId: actor.accountId, userId: actor.userId, now: deps.now() });
    // A credential mints at most what it holds (its read-only flag and expiry too); a web session grants up to its role.
    const grantor = isWebSession(actor) ? undefined : { scopes: actor.scopes, readOnly: actor.principal.readOnly, expiresAt: actor.principal.expiresAt };
    const agent = await createAgent(tx, {
      accountId: actor.accountId, name: body.name, approvedByUserId: actor.userId, approverRole: actor.role, scopes: body.scopes, actor, grantor,
    });
    return {
      status: 201,
      body: {
        ...toIdentityView(agent.identity), token: agent.token, credential_id: agent.credentialId, scopes: agent.scopes,
        read_only: agent.readOnly, expires_at: agent.expiresAt?.toISOString() ?? null, client_ref: body.client_ref ?? null,
      },
      // A replay shows the token again only to the credential (or session) that registered it.
      secretFields: ['token'],
    };
  }),

  listApiKeys: async (req, res) => {
    const page = listRequest<number>(req, res, 'api-keys');
    const rows = await listCredentials(depsOf(req).database.db, req.params.accountId as string, page);
    sendPage(req, res, 'api-keys', rows, page.limit, toCredentialView, (r) => r.seq);
  },
} satisfies HandlerMap;
