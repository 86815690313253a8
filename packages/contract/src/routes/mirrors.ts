import { route } from '../route';
import { createMirrorBody, listQuerySchema, mirrorParams, patchMirrorBody } from '../schemas/requests';
import { mirrorDeliveryView, mirrorView, pageOf } from '../schemas/views';

const M = '/accounts/{accountId}/mirrors';
const ONE = `${M}/{mirrorId}`;
/** Web session only, owners and admins (the `webhooks:manage` scope of their role; docs/mirrors.md). */
const manage = { access: 'web_session', scope: 'webhooks:manage', roles: 'owner or admin' } as const;
const refusals = ['invalid_url', 'not_https', 'private_address', 'unresolvable', 'unknown_channel', 'dm_not_allowed', 'not_a_member'] as const;

/** Channel mirrors: a channel's messages sent on to another chat tool's incoming webhook (docs/mirrors.md). */
export const mirrorRoutes = [
  route({
    id: 'listMirrors', method: 'GET', path: M, tag: 'Mirrors', ...manage, idempotent: true, list: true,
    summary: 'List mirrors with their health',
    request: { query: listQuerySchema },
    responses: { 200: { description: 'A page of mirrors.', body: pageOf(mirrorView, 'Mirror') } },
  }),
  route({
    id: 'createMirror', method: 'POST', path: M, tag: 'Mirrors', ...manage, creating: true, idempotent: false,
    summary: 'Create a mirror',
    description: 'Its creator\'s memberships gate what it sends: only channels they are a member of, never DMs.',
    request: { body: createMirrorBody },
    responses: { 201: { description: 'The mirror.', body: mirrorView, headers: ['Idempotent-Replayed'] } },
    errors: { invalid_request: refusals, budget_exceeded: [] },
  }),
  route({
    id: 'getMirror', method: 'GET', path: ONE, tag: 'Mirrors', ...manage, idempotent: true,
    summary: 'Get a mirror with its health',
    request: { params: mirrorParams },
    responses: { 200: { description: 'The mirror.', body: mirrorView } },
    errors: { not_found: [] },
  }),
  route({
    id: 'updateMirror', method: 'PATCH', path: ONE, tag: 'Mirrors', ...manage, idempotent: true,
    summary: 'Change a mirror, or enable or disable it',
    description: 'Whoever changes its url becomes its creator (`created_by`): its text is then gated by their memberships.',
    request: { params: mirrorParams, body: patchMirrorBody },
    responses: { 200: { description: 'The mirror.', body: mirrorView } },
    errors: { not_found: [], invalid_request: refusals },
  }),
  route({
    id: 'deleteMirror', method: 'DELETE', path: ONE, tag: 'Mirrors', ...manage, idempotent: true,
    summary: 'Remove a mirror; lines not yet sent are dropped',
    request: { params: mirrorParams },
    responses: { 204: { description: 'Removed.' } },
    errors: { not_found: [] },
  }),
  route({
    id: 'listMirrorDeliveries', method: 'GET', path: `${ONE}/deliveries`, tag: 'Mirrors', ...manage, idempotent: true, list: true,
    summary: 'Read a mirror\'s delivery log',
    request: { params: mirrorParams, query: listQuerySchema },
    responses: { 200: { description: 'A page of sends, newest first.', body: pageOf(mirrorDeliveryView, 'MirrorDelivery') } },
    errors: { not_found: [] },
  }),
  route({
    id: 'testMirror', method: 'POST', path: `${ONE}/test`, tag: 'Mirrors', ...manage, idempotent: false,
    summary: 'Send a test message now',
    description: 'Sent in this request; the answer is the result. 10 per minute per mirror.',
    request: { params: mirrorParams },
    responses: { 200: { description: 'The result of the send.', body: mirrorDeliveryView } },
    errors: { not_found: [], rate_limited: [] },
  }),
] as const;
