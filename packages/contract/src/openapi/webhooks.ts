import { EVENT_TYPES, UNSENT_EVENT_TYPES, type EventType } from '@teamchat/core';
import type { JsonSchema } from './joi';
import examples from './webhook-examples.json';

/**
 * The webhook side of the document (OpenAPI 3.1 `webhooks`): one entry per event type, with its
 * body in both payload modes (one schema per type and mode, as core's renderer writes them:
 * packages/core/src/events/render.ts, docs/webhooks.md "Event bodies"), the delivery headers and
 * both signature schemes.
 */

const s = (type: string, extra: JsonSchema = {}): JsonSchema => ({ type, ...extra });
const nullable = (type: string, extra: JsonSchema = {}): JsonSchema => ({ type: [type, 'null'], ...extra });
const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });

const COMMON: Record<string, JsonSchema> = {
  id: s('string', { description: 'The event id (`evt_…`), the same on every retry and replay: dedupe on it.' }),
  type: s('string'),
  account_id: s('string'),
  created_at: s('string', { format: 'date-time', description: 'When the change committed (UTC, milliseconds).' }),
};

const POINTERS_HEAD: Record<string, JsonSchema> = {
  channel: ref('EventChannel'),
  ts: s('string', { description: "The message's `ts`: order by it (delivery order is best-effort)." }),
  author: s('string', { description: "The message author's identity id." }),
  thread_ts: nullable('string', { description: "The thread root's `ts` for a reply." }),
};
const POINTERS_TAIL: Record<string, JsonSchema> = {
  session: { oneOf: [ref('McpSession'), { type: 'null' }], description: 'The MCP session the message was posted through.' },
  links_count: s('integer', { minimum: 0 }),
  attachments_count: s('integer', { minimum: 0 }),
};
const TEXT_FIELDS: Record<string, JsonSchema> = {
  text: s('string', { description: 'The text exactly as posted, up to 16 KB of UTF-8.' }),
  text_truncated: { const: true, description: 'Present only when the text was longer than 16 KB and was cut.' },
  links: s('array', { items: s('string') }),
};

/** The fields each message event adds after `thread_ts` (docs/webhooks.md "Type fields"). */
const TYPE_FIELDS: Partial<Record<EventType, { fields: Record<string, JsonSchema>; required?: string[] }>> = {
  'message.posted': { fields: { mentions: s('array', { items: s('string') }), broadcast: s('boolean') } },
  'message.edited': { fields: { version: s('integer', { minimum: 1 }), edited_by: s('string') } },
  'message.deleted': { fields: { deleted_by: s('string'), approval_id: nullable('string', { description: "The approval that confirmed a credential's delete." }) } },
  'thread.replied': { fields: { parent_author: s('string') } },
  mention: {
    fields: {
      broadcast: s('boolean', { description: '`true` for `<!channel>` or `<!here>`: then `broadcast_kind` and `from`; else `to`.' }),
      to: s('string', { description: 'The mentioned identity (when `broadcast` is false).' }),
      broadcast_kind: s('string', { enum: ['channel', 'here'] }),
      from: s('string', { description: 'The author (when `broadcast` is true).' }),
    },
    required: ['broadcast'],
  },
  'dm.received': { fields: { to: s('string', { description: 'The recipient (one event per other member of the DM).' }) } },
  'reaction.added': { fields: { emoji: s('string'), by: s('string') } },
  'reaction.removed': { fields: { emoji: s('string'), by: s('string') } },
};

/** Types whose text-mode body carries the text and links (render.ts TEXT_TYPES). */
const TEXT_TYPES = new Set<EventType>(['message.posted', 'message.edited', 'thread.replied', 'mention', 'dm.received']);

const OTHER_FIELDS: Partial<Record<EventType, Record<string, JsonSchema>>> = {
  'channel.created': { channel: ref('EventChannel'), by: s('string') },
  'channel.deleted': { channel: ref('EventChannel'), by: s('string') },
  'session.evicted': {
    user_id: s('string'), identity_id: s('string'), credential_id: s('string'), session: ref('McpSession'),
    opened_at: s('string', { format: 'date-time' }), last_used_at: s('string', { format: 'date-time' }),
    reason: { const: 'seat_session_cap' }, cap: s('integer'),
  },
  test: { endpoint_id: s('string', { description: 'The endpoint it was sent to.' }) },
};

const pascal = (type: string) => type.split(/[._]/).map((w) => w[0].toUpperCase() + w.slice(1)).join('');

function bodySchema(type: EventType, mode: 'pointers' | 'text'): JsonSchema {
  const properties: Record<string, JsonSchema> = { ...COMMON, type: { const: type } };
  const required = Object.keys(COMMON);
  const typed = TYPE_FIELDS[type];
  if (typed) {
    Object.assign(properties, POINTERS_HEAD, typed.fields, POINTERS_TAIL);
    required.push(...Object.keys(POINTERS_HEAD), ...(typed.required ?? Object.keys(typed.fields)), ...Object.keys(POINTERS_TAIL));
    if (mode === 'text' && TEXT_TYPES.has(type)) {
      Object.assign(properties, TEXT_FIELDS);
      required.push('text', 'links');
    }
  } else {
    const other = OTHER_FIELDS[type] ?? {};
    Object.assign(properties, other);
    required.push(...Object.keys(other));
  }
  return { type: 'object', required, properties, additionalProperties: false };
}

const HEADERS: Record<string, JsonSchema> = {
  'X-Service-Signature': {
    description: '`t=<unix seconds>,v1=<hex>`: v1 is the hex HMAC-SHA256, keyed with the endpoint\'s signing secret (the whole `whsec_…` string), '
      + 'over `<t>.<raw body>`. During a rotation it carries two `v1` values, current secret first. Verify on the raw body, compare in constant '
      + 'time with every `v1` (one match suffices), and reject a `t` more than 5 minutes from your clock.',
    required: true, schema: { type: 'string', pattern: '^t=\\d+(,v1=[0-9a-f]{64})+$' },
  },
  'X-Service-Event': { description: 'The event name, equal to the body\'s `type`.', required: true, schema: { type: 'string' } },
  'X-Service-Delivery': { description: 'This attempt\'s id (`dlv_…`); a retry has a new one.', required: true, schema: { type: 'string' } },
  'X-Service-Attempt': { description: 'The attempt number in its chain, from 1.', required: true, schema: { type: 'integer', minimum: 1 } },
  'webhook-id': { description: 'Standard Webhooks: the event id (`evt_…`), the same on every retry and replay.', required: true, schema: { type: 'string' } },
  'webhook-timestamp': { description: 'Standard Webhooks: unix seconds, the same as `t`.', required: true, schema: { type: 'integer' } },
  'webhook-signature': {
    description: 'Standard Webhooks: `v1,<base64>` of HMAC-SHA256 over `<webhook-id>.<webhook-timestamp>.<raw body>`, keyed with the base64-decoded '
      + 'part of the secret after `whsec_`; two, space-separated, during a rotation.',
    required: true, schema: { type: 'string' },
  },
  Authorization: { description: '`Bearer <value>` when the endpoint\'s custom header is set (on the dashboard).', required: false, schema: { type: 'string' } },
};

const DELIVERY_NOTES = [
  'Sent as an HTTPS POST with `Content-Type: application/json` and `User-Agent: teamchat-webhooks/1`. Answer any 2xx within 10 seconds '
    + '(the body is ignored); anything else is retried after 1 min, 5 min, 30 min, 2 h, 6 h, 12 h and 24 h, then the delivery is dead.',
  'Two signature schemes sign every delivery; either is enough: `X-Service-Signature` (`t=…,v1=…`) and Standard Webhooks '
    + '(`webhook-id`, `webhook-timestamp`, `webhook-signature`). Deduplicate on the event `id`.',
].join('\n\n');

export interface WebhooksSection {
  webhooks: Record<string, JsonSchema>;
  /** the delivery headers, as parameters named `webhook.<header>` */
  parameters: Record<string, JsonSchema>;
  securitySchemes: Record<string, JsonSchema>;
  tags: Array<{ name: string; description: string }>;
}

/** The `webhooks` entries, and the schemas and headers they use (added to `components`). */
export function webhooksSection(components: Record<string, JsonSchema>): WebhooksSection {
  components.EventChannel = {
    type: 'object', required: ['id', 'kind'], additionalProperties: false,
    properties: { id: s('string'), kind: s('string', { enum: ['channel', 'dm'] }) },
  };
  components.McpSession = {
    type: 'object', required: ['client', 'version'], additionalProperties: false,
    properties: { client: s('string'), version: s('string') },
  };
  const webhooks: Record<string, JsonSchema> = {};
  const byType = examples as Record<string, Record<string, unknown>>;
  for (const type of EVENT_TYPES) {
    const name = pascal(type);
    const twoModes = TEXT_TYPES.has(type);
    const schemaNames = twoModes ? [`${name}EventPointers`, `${name}EventText`] : [`${name}Event`];
    components[schemaNames[0]] = bodySchema(type, 'pointers');
    if (twoModes) components[schemaNames[1]] = bodySchema(type, 'text');
    const found = byType[type] ?? {};
    const unsent = (UNSENT_EVENT_TYPES as readonly string[]).includes(type);
    webhooks[type] = {
      post: {
        operationId: `${name[0].toLowerCase()}${name.slice(1)}Event`,
        tags: ['Events'],
        summary: `\`${type}\``,
        description: [
          unsent ? '**Subscribable, not sent yet** (spec: Events rule 1); the body is what the renderer would send.' : '',
          twoModes ? 'The body depends on the endpoint\'s `payload`: `pointers` (never text) or `text` (adds `text` and `links`).'
            : 'The same body in both payload modes (never text).',
          DELIVERY_NOTES,
        ].filter(Boolean).join('\n\n'),
        security: [{ serviceSignature: [] }, { standardWebhooksSignature: [] }],
        parameters: Object.keys(HEADERS).map((h) => ({ $ref: `#/components/parameters/webhook.${h}` })),
        requestBody: {
          required: true,
          content: {
            'application/json': {
              schema: twoModes ? { oneOf: schemaNames.map(ref) } : ref(schemaNames[0]),
              ...(Object.keys(found).length ? { examples: Object.fromEntries(Object.entries(found).map(([k, value]) => [k, { summary: k.replace(/_/g, ' '), value }])) } : {}),
            },
          },
        },
        responses: {
          '200': { description: 'Any 2xx within 10 seconds: delivered (the body is ignored).' },
          '410': { description: 'Gone: the endpoint is disabled (`disabled_reason: gone`).' },
          default: { description: 'Anything else, or no answer in 10 seconds: retried.' },
        },
      },
    };
  }
  return {
    webhooks,
    parameters: Object.fromEntries(Object.entries(HEADERS).map(([h, p]) => [`webhook.${h}`, { name: h, in: 'header', ...p }])),
    securitySchemes: {
      serviceSignature: { type: 'apiKey', in: 'header', name: 'X-Service-Signature', description: HEADERS['X-Service-Signature'].description },
      standardWebhooksSignature: { type: 'apiKey', in: 'header', name: 'webhook-signature', description: HEADERS['webhook-signature'].description },
    },
    tags: [{ name: 'Events', description: 'What the service POSTs to a registered webhook endpoint (outbound only), signed.' }],
  };
}
