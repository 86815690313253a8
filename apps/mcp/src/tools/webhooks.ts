import { z } from 'zod/v4';
import { defineTool, fields, pageQuery, reads, seg, writes, type ToolDef } from './define';

const WH = 'Webhooks' as const;
const EVENTS = [
  'message.posted', 'message.edited', 'message.deleted', 'thread.replied', 'mention', 'dm.received',
  'channel.created', 'channel.deleted', 'reaction.added', 'reaction.removed', 'session.evicted',
] as const;

const endpointId = z.string().min(1).max(80).describe('Webhook endpoint id (`id` from list_webhooks).');
const url = z.url().max(2048).describe('Public https URL of the receiver; private and link-local addresses are refused.');
const events = z.array(z.enum(EVENTS)).min(1).describe('Events to send, at least one.');
const channels = z.union([z.literal('all'), z.array(z.string().min(1).max(80)).min(1)])
  .describe('"all", or a list of channel ids to cover.');
const payload = z.enum(['pointers', 'text']).describe('"pointers" (ids only, the default) or "text" (adds message text and links).');
const endpointPath = (id: string) => `/webhooks/${seg(id)}`;

/** Outbound webhook endpoints and their delivery log (webhooks:manage: owners' and admins' credentials only). */
export const webhookTools: ToolDef[] = [
  defineTool({
    name: 'list_webhooks', title: 'List webhook endpoints', toolset: WH, scope: 'webhooks:manage', method: 'GET', path: '/accounts/{accountId}/webhooks',
    description: 'Lists the webhook endpoints with their health: enabled, disabled_reason, recent delivery results.',
    annotations: reads,
    input: { limit: fields.limit, cursor: fields.cursor },
    request: (a) => ({ method: 'GET', path: '/webhooks', query: pageQuery(a) }),
  }),
  defineTool({
    name: 'register_webhook', title: 'Register a webhook endpoint', toolset: WH, scope: 'webhooks:manage', method: 'POST', path: '/accounts/{accountId}/webhooks',
    description: 'Registers a webhook endpoint. Through an agent it lands disabled (`awaiting_enable`): an owner or admin enables it on the dashboard, and its signing secret is revealed there.',
    annotations: writes({ openWorldHint: true }),
    input: { url, events, channels, payload: payload.optional(), client_ref: fields.clientRef, idempotency_key: fields.idempotencyKey },
    request: (a) => ({
      method: 'POST', path: '/webhooks', body: { url: a.url, events: a.events, channels: a.channels, payload: a.payload, client_ref: a.client_ref },
      headers: { 'Idempotency-Key': a.idempotency_key },
    }),
  }),
  defineTool({
    name: 'update_webhook', title: 'Change a webhook endpoint', toolset: WH, scope: 'webhooks:manage', method: 'PATCH', path: '/accounts/{accountId}/webhooks/{endpointId}',
    description: 'Changes an endpoint\'s URL, events, channels or payload mode, or disables it (`enabled: false`). Changing the URL or switching to "text" disables it until a person enables it again; `enabled: true` needs a person on the dashboard.',
    annotations: writes({ idempotentHint: true, openWorldHint: true }),
    input: {
      endpoint_id: endpointId, url: url.optional(), events: events.optional(), channels: channels.optional(), payload: payload.optional(),
      enabled: z.boolean().optional().describe('false disables the endpoint; true is refused through a credential (web_session_required).'),
    },
    request: (a) => ({
      method: 'PATCH', path: endpointPath(a.endpoint_id),
      body: { url: a.url, events: a.events, channels: a.channels, payload: a.payload, enabled: a.enabled },
    }),
  }),
  defineTool({
    name: 'send_webhook_test', title: 'Send a test event', toolset: WH, scope: 'webhooks:manage', method: 'POST', path: '/accounts/{accountId}/webhooks/{endpointId}/test',
    description: 'Delivers a `test` event to the endpoint now and returns the delivery result (never retried; 10 per minute per endpoint).',
    annotations: writes({ openWorldHint: true }),
    input: { endpoint_id: endpointId },
    request: (a) => ({ method: 'POST', path: `${endpointPath(a.endpoint_id)}/test`, body: {} }),
  }),
  defineTool({
    name: 'list_webhook_deliveries', title: 'Read the delivery log', toolset: WH, scope: 'webhooks:manage', method: 'GET', path: '/accounts/{accountId}/webhooks/{endpointId}/deliveries',
    description: "Reads an endpoint's delivery log (30 days): each attempt's status (pending, delivered, retrying, failed, dead), attempt number, event id and next_retry_at.",
    annotations: reads,
    input: { endpoint_id: endpointId, limit: fields.limit, cursor: fields.cursor },
    request: (a) => ({ method: 'GET', path: `${endpointPath(a.endpoint_id)}/deliveries`, query: pageQuery(a) }),
  }),
  defineTool({
    name: 'replay_webhook_delivery', title: 'Replay a delivery', toolset: WH, scope: 'webhooks:manage', method: 'POST', path: '/accounts/{accountId}/webhooks/{endpointId}/deliveries/{deliveryId}/replay',
    description: 'Sends a logged delivery again (any status, dead included): exactly the body sent the first time, same event id. 60 per hour per endpoint.',
    annotations: writes({ openWorldHint: true }),
    input: { endpoint_id: endpointId, delivery_id: z.string().min(1).max(80).describe('Delivery id (`id` from list_webhook_deliveries).') },
    request: (a) => ({ method: 'POST', path: `${endpointPath(a.endpoint_id)}/deliveries/${seg(a.delivery_id)}/replay`, body: {} }),
  }),
];
