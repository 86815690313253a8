import { z } from 'zod/v4';
import { ENDPOINT_LIMITS, ENDPOINT_PAYLOAD_MODES, EVENT_TYPES } from '@teamchat/core';
import { defineTool, destructive, fields, idOf, pageQuery, reads, writes, type ToolDef } from './define';

const WH = 'Webhooks' as const;

// The register/change payload's rules are the REST route's (packages/contract/src/schemas/requests.ts);
// the event names are the events module's one list (EVENT_TYPES, which the route takes as SUBSCRIBABLE_EVENTS),
// so a new event type reaches this schema by itself.
const endpointId = idOf('webhook').describe('Webhook endpoint id (`id` from list_webhooks, "whe_…").');
const url = z.url().max(ENDPOINT_LIMITS.urlMaxLength)
  .describe('Public https URL of the receiver (up to 2,048 characters). Private, loopback and link-local addresses are refused (invalid_request, field url, with a reason).');
const events = z.array(z.enum(EVENT_TYPES)).min(1).max(ENDPOINT_LIMITS.maxEvents)
  .describe('Event names to send, at least one, no repeats. channel.created, channel.deleted and session.evicted can be subscribed to but are not sent yet; a test event reaches the endpoint whatever it lists.');
const channels = z.union([z.literal('all'), z.array(idOf('channel')).min(1).max(ENDPOINT_LIMITS.maxChannels)])
  .describe('"all" (every channel and direct message), or a list of 1..500 channel ids (`id` from list_channels; direct messages are covered only by "all").');
const payload = z.enum(ENDPOINT_PAYLOAD_MODES)
  .describe('"pointers" (ids, timestamps, identities; never text; the default) or "text" (adds the message text and links).');

/** Outbound webhook endpoints and their delivery log (webhooks:manage: owners' and admins' credentials only). */
export const webhookTools: ToolDef[] = [
  defineTool({
    name: 'list_webhooks', title: 'List webhook endpoints', toolset: WH, route: 'listWebhookEndpoints',
    description: 'Lists the webhook endpoints, oldest first, each with `enabled`, `disabled_reason` (awaiting_enable, manual, failing, gone, slow), `version`, and `health`: last_success_at, last_failure_at, success_rate_24h, attempts_24h, median_latency_ms, pending_count.',
    annotations: reads,
    input: { limit: fields.limit, cursor: fields.cursor },
    call: (api, accountId, a) => api.GET('/accounts/{accountId}/webhooks', { params: { path: { accountId }, query: pageQuery(a) } }),
  }),
  defineTool({
    name: 'register_webhook', title: 'Register a webhook endpoint', toolset: WH, route: 'registerWebhookEndpoint',
    description: 'Registers a webhook endpoint. Through this credential it lands disabled (`enabled: false`, `disabled_reason: awaiting_enable`, `secret_pending_reveal: true`) and delivers nothing: owners and admins are notified, and one of them enables it and reveals its signing secret on the dashboard (the secret is never returned here). Counts against the webhook endpoints per seat (budget_exceeded when full).',
    annotations: writes(),
    input: { url, events, channels, payload: payload.optional(), idempotency_key: fields.idempotencyKey },
    call: (api, accountId, a) => api.POST('/accounts/{accountId}/webhooks', {
      params: { path: { accountId }, header: { 'Idempotency-Key': a.idempotency_key } },
      body: { url: a.url, events: a.events, channels: a.channels, payload: a.payload },
    }),
  }),
  defineTool({
    name: 'update_webhook', title: 'Change a webhook endpoint', toolset: WH, route: 'updateWebhookEndpoint',
    description: 'Changes an endpoint\'s url, events, channels or payload mode, or disables it (`enabled: false`, reason manual). Give at least one field. Changing the url or switching payload to "text" disables it (`awaiting_enable`) until an owner or admin enables it again on the dashboard; disabling drops its pending deliveries. `enabled: true` is refused (forbidden, web_session_required).',
    // Destructive: disabling, a new url or text mode drop the endpoint's open deliveries; repeating the same change changes nothing more.
    annotations: destructive({ idempotentHint: true }),
    input: {
      endpoint_id: endpointId, url: url.optional(), events: events.optional(), channels: channels.optional(), payload: payload.optional(),
      enabled: z.boolean().optional().describe('false disables the endpoint (reason manual); true is refused through a credential (forbidden, web_session_required): a person enables it on the dashboard.'),
      version: z.number().int().min(1).optional()
        .describe("The endpoint's `version` when you read it (list_webhooks); if it has changed since, the change is refused with stale (sent as If-Match)."),
    },
    call: (api, accountId, a) => api.PATCH('/accounts/{accountId}/webhooks/{endpointId}', {
      params: { path: { accountId, endpointId: a.endpoint_id }, header: { 'If-Match': a.version === undefined ? undefined : `"${a.version}"` } },
      body: { url: a.url, events: a.events, channels: a.channels, payload: a.payload, enabled: a.enabled },
    }),
  }),
  defineTool({
    name: 'send_webhook_test', title: 'Send a test event', toolset: WH, route: 'testWebhookEndpoint',
    description: 'Delivers a signed `test` event to the endpoint now (disabled endpoints too, except one awaiting enable: forbidden, reason awaiting_enable) and returns the result: delivery_id, status (delivered or failed), response_status, latency_ms, error. Never retried; costs one call unit of the endpoint creator\'s seat; 10 per minute per endpoint (rate_limited with retry_after).',
    annotations: writes({ openWorldHint: true }),
    input: { endpoint_id: endpointId },
    call: (api, accountId, a) => api.POST('/accounts/{accountId}/webhooks/{endpointId}/test', { params: { path: { accountId, endpointId: a.endpoint_id } } }),
  }),
  defineTool({
    name: 'list_webhook_deliveries', title: 'Read the delivery log', toolset: WH, route: 'listWebhookDeliveries',
    description: "Reads an endpoint's delivery log (kept 30 days), newest first, one entry per attempt: id, event_id, event_type, kind (event, test, replay), attempt, status (pending, delivered, retrying, failed, dead), next_retry_at, response_status, latency_ms, error.",
    annotations: reads,
    input: { endpoint_id: endpointId, limit: fields.limit, cursor: fields.cursor },
    call: (api, accountId, a) => api.GET('/accounts/{accountId}/webhooks/{endpointId}/deliveries', {
      params: { path: { accountId, endpointId: a.endpoint_id }, query: pageQuery(a) },
    }),
  }),
  defineTool({
    name: 'replay_webhook_delivery', title: 'Replay a delivery', toolset: WH, route: 'replayWebhookDelivery',
    description: 'Sends a logged delivery again now, whatever its status (dead included): a new delivery with exactly the body sent the first time and the same event id. Returns delivery_id, status, response_status, latency_ms, error, next_retry_at. One attempt (dead if it fails); 60 per hour per endpoint (rate_limited with retry_after). Refused for an endpoint awaiting enable (forbidden, reason awaiting_enable).',
    annotations: writes({ openWorldHint: true }),
    input: { endpoint_id: endpointId, delivery_id: idOf('delivery').describe('Delivery id (`id` from list_webhook_deliveries, "dlv_…").') },
    call: (api, accountId, a) => api.POST('/accounts/{accountId}/webhooks/{endpointId}/deliveries/{deliveryId}/replay', {
      params: { path: { accountId, endpointId: a.endpoint_id, deliveryId: a.delivery_id } },
    }),
  }),
];
