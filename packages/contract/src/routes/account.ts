import { route } from '../route';
import { apiKeyParams, createApiKeyBody, jobParams, listQuerySchema, registerAgentBody } from '../schemas/requests';
import {
  accountView, auditView, createdApiKeyView, credentialView, identityView, jobView, memberView, pageOf, registeredAgentView, revokedView, usageView,
} from '../schemas/views';

const A = '/accounts/{accountId}';

/** The account, its directory (members, identities, API keys), jobs and the audit log. */
export const accountRoutes = [
  route({
    id: 'getAccount', method: 'GET', path: A, tag: 'Account', access: 'credential', scope: 'account:manage', idempotent: true,
    summary: 'Get the account, its plan, state and limits',
    description: "Each limit with the caller's seat's use of it, counted with this very call (null when limits are not enforced).",
    responses: { 200: { description: 'The account.', body: accountView } },
  }),
  route({
    id: 'listMembers', method: 'GET', path: `${A}/members`, tag: 'Members and identities', access: 'credential', scope: 'members:manage', idempotent: true, list: true,
    summary: 'List account members',
    request: { query: listQuerySchema },
    responses: { 200: { description: 'A page of members.', body: pageOf(memberView, 'Member') } },
  }),
  route({
    id: 'listIdentities', method: 'GET', path: `${A}/identities`, tag: 'Members and identities', access: 'credential', scope: 'identities:manage', idempotent: true, list: true,
    summary: "List identities (people's and agents')",
    request: { query: listQuerySchema },
    responses: { 200: { description: 'A page of identities.', body: pageOf(identityView, 'Identity') } },
  }),
  route({
    id: 'registerAgent', method: 'POST', path: `${A}/identities`, tag: 'Members and identities', access: 'credential', scope: 'identities:manage',
    creating: true, idempotent: false,
    summary: 'Register an agent identity',
    description: "Approved by the caller's person; its token is shown only in this answer. A credential mints at most what it holds "
      + '(its scopes, read-only flag and expiry); a web session grants up to its role. Agents per seat per UTC day are limited by plan '
      + '(429 `budget_exceeded`, scope `agents_per_seat_per_day`).',
    request: { body: registerAgentBody },
    responses: { 201: { description: 'The agent, with its token.', body: registeredAgentView } },
    errors: { forbidden: ['role_scope'], insufficient_scope: ['scope_not_held'], budget_exceeded: [] },
  }),
  route({
    id: 'listApiKeys', method: 'GET', path: `${A}/api-keys`, tag: 'Members and identities', access: 'credential', scope: 'credentials:manage', idempotent: true, list: true,
    summary: 'List API keys',
    request: { query: listQuerySchema },
    responses: { 200: { description: 'A page of API keys and agent tokens (never their secrets).', body: pageOf(credentialView, 'ApiKey') } },
  }),
  route({
    id: 'createApiKey', method: 'POST', path: `${A}/api-keys`, tag: 'Members and identities', access: 'web_session', scope: 'credentials:manage',
    creating: true, idempotent: false,
    summary: 'Create an API key for the caller\'s own seat',
    description: 'Scopes up to the caller\'s role; the key is shown in this answer only. Web session only: a credential never mints keys.',
    request: { body: createApiKeyBody },
    responses: { 201: { description: 'The key.', body: createdApiKeyView, headers: ['Idempotent-Replayed'] } },
    errors: { forbidden: ['role_scope'] },
  }),
  route({
    id: 'revokeApiKey', method: 'POST', path: `${A}/api-keys/{keyId}/revoke`, tag: 'Members and identities', access: 'web_session',
    scope: 'credentials:manage', roles: 'a member revokes their own seat\'s keys and agents; owners and admins any of the account', idempotent: true,
    summary: 'Revoke an API key or agent token',
    request: { params: apiKeyParams },
    responses: { 200: { description: 'Revoked.', body: revokedView } },
    errors: { not_found: [] },
  }),
  route({
    id: 'getUsage', method: 'GET', path: `${A}/usage`, tag: 'Account', access: 'credential', scope: 'account:manage', idempotent: true,
    summary: 'Each seat\'s use of the plan\'s limits today',
    description: 'Calls in the current minute and call units spent today, per seat; owners and admins see every seat, a member their own.',
    responses: { 200: { description: 'The usage.', body: usageView } },
  }),
  route({
    id: 'getJob', method: 'GET', path: `${A}/jobs/{jobId}`, tag: 'Account', access: 'credential', scope: 'account:manage', idempotent: true,
    summary: 'Follow a background job',
    request: { params: jobParams },
    responses: { 200: { description: 'The job.', body: jobView } },
    errors: { not_found: [] },
  }),
  route({
    id: 'listAudit', method: 'GET', path: `${A}/audit`, tag: 'Account', access: 'credential', scope: 'audit:read', idempotent: true, list: true,
    summary: 'Read the audit log',
    description: 'Newest first. Entries about channels the reader cannot read are redacted.',
    request: { query: listQuerySchema },
    responses: { 200: { description: 'A page of audit records.', body: pageOf(auditView, 'AuditRecord') } },
  }),
] as const;
