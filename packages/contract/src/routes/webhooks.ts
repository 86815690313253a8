import { route } from '../route';
import {
  deliveryLogQuery, deliveryParams, endpointParams, listQuerySchema, patchEndpointBody, registerEndpointBody, replayFailedBody, replayFailedQuery, statsQuery,
} from '../schemas/requests';
import {
  deliveryDetailView, deliveryView, endpointStatsView, manualDeliveryView, pageOf, replayFailedCountView, replayFailedJobView, testDeliveryView,
  webhookEndpointView,
} from '../schemas/views';

const WH = '/accounts/{accountId}/webhooks';
const ONE = `${WH}/{endpointId}`;
/** `webhooks:manage` belongs only to an owner's or admin's credential (spec: Authentication 8). */
const manage = { access: 'credential', scope: 'webhooks:manage', roles: 'owner or admin' } as const;
const urlRefusals = ['invalid_url', 'not_https', 'private_address', 'unresolvable', 'unknown_channel'] as const;

/**
 * Webhook endpoints and their lifecycle (spec: Webhooks; Webhook endpoint enablement; Secret
 * rotation), and the delivery side: test, delivery log, replay.
 */
export const webhookRoutes = [
  route({
    id: 'listWebhookEndpoints', method: 'GET', path: WH, tag: 'Webhooks', ...manage, idempotent: true, list: true,
    summary: 'List endpoints with their health',
    request: { query: listQuerySchema },
    responses: { 200: { description: 'A page of endpoints, each with `health`.', body: pageOf(webhookEndpointView, 'WebhookEndpoint') } },
  }),
  route({
    id: 'registerWebhookEndpoint', method: 'POST', path: WH, tag: 'Webhooks', ...manage, creating: true, idempotent: false,
    summary: 'Register an endpoint',
    description: 'From the dashboard (web session): enabled, and the signing secret is in this answer only. Through a credential: '
      + 'disabled with `disabled_reason: awaiting_enable` and `secret_pending_reveal: true`; owners and admins are emailed. '
      + 'A credential asking for `enabled: true` or setting `authorization` gets 403 `forbidden`, `web_session_required`.',
    request: { body: registerEndpointBody },
    responses: { 201: { description: 'The endpoint.', body: webhookEndpointView, headers: ['ETag', 'Idempotent-Replayed'] } },
    errors: { invalid_request: urlRefusals, forbidden: ['web_session_required'], budget_exceeded: [] },
  }),
  route({
    id: 'getWebhookEndpoint', method: 'GET', path: ONE, tag: 'Webhooks', ...manage, idempotent: true,
    summary: 'Get one endpoint with its health',
    request: { params: endpointParams },
    responses: { 200: { description: 'The endpoint.', body: webhookEndpointView, headers: ['ETag'] } },
    errors: { not_found: [] },
  }),
  route({
    id: 'updateWebhookEndpoint', method: 'PATCH', path: ONE, tag: 'Webhooks', ...manage, idempotent: true, ifMatch: true,
    summary: 'Change an endpoint, or enable or disable it',
    description: 'Enabling (web session only) delivers a test event first; its result is `test_delivery`. A credential that changes '
      + 'the URL or switches payload to `text` disables it (`awaiting_enable`).',
    request: { params: endpointParams, body: patchEndpointBody },
    responses: { 200: { description: 'The endpoint.', body: webhookEndpointView, headers: ['ETag'] } },
    errors: { not_found: [], stale: [], invalid_request: urlRefusals, forbidden: ['web_session_required'], budget_exceeded: [] },
  }),
  route({
    id: 'deleteWebhookEndpoint', method: 'DELETE', path: ONE, tag: 'Webhooks', ...manage, idempotent: true,
    summary: 'Remove an endpoint; pending deliveries are dropped',
    request: { params: endpointParams },
    responses: { 204: { description: 'Removed.' } },
    errors: { not_found: [] },
  }),
  route({
    id: 'revealWebhookSecret', method: 'POST', path: `${ONE}/reveal`, tag: 'Webhooks', ...manage, access: 'web_session', idempotent: false,
    summary: 'Show once the secret of an endpoint a credential created',
    request: { params: endpointParams },
    responses: { 200: { description: 'The endpoint with its `secret`.', body: webhookEndpointView, headers: ['ETag', 'Cache-Control'] } },
    errors: { not_found: [], forbidden: ['secret_not_pending_reveal'] },
  }),
  route({
    id: 'rotateWebhookSecret', method: 'POST', path: `${ONE}/rotate`, tag: 'Webhooks', ...manage, access: 'web_session', idempotent: false,
    summary: 'Issue a new signing secret',
    description: 'The old secret keeps signing alongside the new one for 24 hours, until `previous_valid_until`.',
    request: { params: endpointParams },
    responses: { 200: { description: 'The endpoint with its new `secret`.', body: webhookEndpointView, headers: ['ETag', 'Cache-Control'] } },
    errors: { not_found: [] },
  }),
  route({
    id: 'testWebhookEndpoint', method: 'POST', path: `${ONE}/test`, tag: 'Webhook deliveries', ...manage, idempotent: false,
    summary: 'Deliver a test event now',
    description: 'Delivered in this request; the answer is the result. Never retried. 10 per minute per endpoint.',
    request: { params: endpointParams },
    responses: { 200: { description: 'The result of the attempt.', body: testDeliveryView } },
    errors: { not_found: [], forbidden: ['awaiting_enable'], rate_limited: [] },
  }),
  route({
    id: 'listWebhookDeliveries', method: 'GET', path: `${ONE}/deliveries`, tag: 'Webhook deliveries', ...manage, idempotent: true, list: true,
    summary: 'Read the delivery log',
    description: 'One entry per attempt, newest first; kept 30 days. Filters: `status` (a comma-separated list), `event_type`, `event_id`, '
      + '`since` and `until` (the attempt\'s creation time).',
    request: { params: endpointParams, query: deliveryLogQuery },
    responses: { 200: { description: 'A page of attempts.', body: pageOf(deliveryView, 'WebhookDelivery') } },
    errors: { not_found: [] },
  }),
  route({
    id: 'replayWebhookDelivery', method: 'POST', path: `${ONE}/deliveries/{deliveryId}/replay`, tag: 'Webhook deliveries', ...manage, idempotent: false,
    summary: 'Send a logged delivery again',
    description: 'A new delivery of the same event id with exactly the body sent the first time, whatever its status. 60 per hour per endpoint.',
    request: { params: deliveryParams },
    responses: { 200: { description: 'The result of the attempt (`retrying` while the creator\'s seat has no call units).', body: manualDeliveryView } },
    errors: { not_found: [], forbidden: ['awaiting_enable', 'cannot_read_channel'], rate_limited: [] },
  }),
  route({
    id: 'getWebhookDelivery', method: 'GET', path: `${ONE}/deliveries/{deliveryId}`, tag: 'Webhook deliveries', ...manage, idempotent: true,
    summary: 'One logged delivery with its request',
    description: 'The headers and the exact body sent. The body is withheld (`body: null`, `body_withheld: cannot_read_channel`) when it '
      + 'carries text of a channel the caller cannot read, the rule replays follow.',
    request: { params: deliveryParams },
    responses: { 200: { description: 'The attempt and its request.', body: deliveryDetailView } },
    errors: { not_found: [] },
  }),
  route({
    id: 'countFailedWebhookDeliveries', method: 'GET', path: `${ONE}/replay-failed`, tag: 'Webhook deliveries', ...manage, idempotent: true,
    summary: 'Count the failed deliveries a bulk replay would send',
    request: { params: endpointParams, query: replayFailedQuery },
    responses: { 200: { description: 'How many, and the replays left this hour.', body: replayFailedCountView } },
    errors: { not_found: [] },
  }),
  route({
    id: 'replayFailedWebhookDeliveries', method: 'POST', path: `${ONE}/replay-failed`, tag: 'Webhook deliveries', ...manage, idempotent: false,
    summary: 'Replay every failed delivery since a time, as a background job',
    description: 'Within the endpoint\'s replay limit (60 per hour): the whole count is reserved at once, or 429 `rate_limited`.',
    request: { params: endpointParams, body: replayFailedBody },
    responses: { 202: { description: 'Accepted: follow `job_url`.', body: replayFailedJobView } },
    errors: { not_found: [], forbidden: ['awaiting_enable'], rate_limited: [] },
  }),
  route({
    id: 'getWebhookEndpointStats', method: 'GET', path: `${ONE}/stats`, tag: 'Webhook deliveries', ...manage, idempotent: true,
    summary: 'Attempts per hour by outcome, and latency percentiles',
    request: { params: endpointParams, query: statsQuery },
    responses: { 200: { description: 'The window\'s hourly buckets and totals.', body: endpointStatsView } },
    errors: { not_found: [] },
  }),
] as const;
