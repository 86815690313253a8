import Joi from 'joi';
import { ENDPOINT_PAYLOAD_MODES, SUBSCRIBABLE_EVENTS } from '@teamchat/core';

/**
 * What the API answers, resource by resource (the mappers in core build exactly these): each is
 * an object with no other fields, so a field a mapper adds without its schema fails the API tests
 * (the response check, test/support/openapi-responses.ts). Clients ignore unknown fields
 * (spec: Versioning 2); the server never sends one undeclared.
 */
const time = Joi.string().isoDate();
const nullable = <S extends Joi.Schema>(s: S) => s.allow(null).required();
const str = Joi.string();
const int = Joi.number().integer();

export const schemas = {
  time,
  nullable,
};

/** A page of a list: `{ data, next_cursor }`; `next_cursor: null` means there is no more. */
export const pageOf = (item: Joi.Schema, name: string) => Joi.object({
  data: Joi.array().items(item).required(),
  next_cursor: nullable(str.description('Pass as `cursor` to read the next page; null on the last page.')),
}).id(`${name}Page`);

export const reactionView = Joi.object({
  emoji: str.required(), count: int.min(1).required(), by: Joi.array().items(str).required(),
}).id('Reaction');

/** A link (`url`) as posted, or a file (`file_id`) with its name, size and content type at the time of posting. */
export const attachmentView = Joi.object({
  title: str, url: str, file_id: str, mime_type: str, size: int.min(0), name: str, content_type: str,
}).id('Attachment');

/** Not a component: its nullable use would make the component nullable too. */
export const sessionView = Joi.object({ client: str.required(), version: str.required() })
  .description('The MCP session a message was posted through: its client and version.');

export const messageView = Joi.object({
  ts: str.required().description("The message's timestamp, also its id in paths: \"1700000000.000001\"."),
  channel_id: str.required(),
  author: str.required().description('The author identity id.'),
  text: str.allow('').required(),
  attachments: Joi.array().items(attachmentView).required(),
  links: Joi.array().items(str).required(),
  thread_ts: nullable(str),
  reply_count: int.min(0).required(),
  mentions: Joi.array().items(str).required(),
  broadcast: Joi.boolean().required(),
  reactions: Joi.array().items(reactionView).required(),
  version: int.min(1).required(),
  client_ref: nullable(str),
  session: nullable(sessionView),
  created_at: time.required(),
  edited_at: nullable(time),
}).id('Message');

export const channelView = Joi.object({
  id: str.required(),
  kind: str.valid('channel', 'dm').required(),
  name: nullable(str).description('null for a direct message'),
  topic: str.allow('').required(),
  version: int.min(1).required(),
  created_by: str.required(),
  client_ref: nullable(str),
  members: Joi.array().items(str).description('Direct messages only: the member identity ids (fixed at opening).'),
  is_member: Joi.boolean(),
  created_at: time.required(),
  updated_at: time.required(),
}).id('Channel');

export const channelMemberView = Joi.object({
  channel_id: str.required(), identity_id: str.required(), kind: str.valid('person', 'agent').required(), name: str.required(), added_at: time.required(),
  client_ref: nullable(str).optional(),
}).id('ChannelMember');

export const memberView = Joi.object({
  user_id: str.required(), identity_id: str.required(), email: str.required(), role: str.valid('owner', 'admin', 'member').required(), joined_at: time.required(),
}).id('Member');

export const identityView = Joi.object({
  id: str.required(), kind: str.valid('person', 'agent').required(), name: str.required(),
  user_id: nullable(str), approved_by_user_id: nullable(str), created_at: time.required(),
}).id('Identity');

export const registeredAgentView = identityView.keys({
  token: str.description('The agent token: shown in this answer only (an Idempotency-Key replay shows it only to the same caller).'),
  credential_id: str.required(),
  scopes: Joi.array().items(str).required(),
  read_only: Joi.boolean().required(),
  expires_at: nullable(time),
  client_ref: nullable(str),
}).id('RegisteredAgent');

export const credentialView = Joi.object({
  id: str.required(), kind: str.valid('api_key', 'agent_token').required(), prefix: str.required(), scopes: Joi.array().items(str).required(),
  read_only: Joi.boolean().required(), user_id: str.required(), identity_id: str.required(), created_at: time.required(),
  expires_at: nullable(time), last_used_at: nullable(time), revoked_at: nullable(time),
}).id('ApiKey');

export const jobView = Joi.object({
  id: str.required(), type: str.required(), status: str.valid('queued', 'running', 'succeeded', 'failed').required(),
  result: Joi.any().required(), error: Joi.any().required(), created_at: time.required(), finished_at: nullable(time),
}).id('Job');

export const auditView = Joi.object({
  id: str.required(),
  action: str.required(),
  actor: Joi.object({
    user_id: nullable(str), identity_id: nullable(str), credential_id: nullable(str),
    via: str.valid('api_key', 'agent_token', 'web_session', 'cli', 'system').required(),
  }).required(),
  target: nullable(Joi.object({ type: str.required(), id: nullable(str) })),
  data: Joi.object().unknown(true).required(),
  request_id: nullable(str),
  created_at: time.required(),
  redacted: Joi.boolean().valid(true)
    .description('Present when the entry is about a channel the reader cannot read: its target and data are left out.'),
}).id('AuditRecord');

const limitUse = Joi.object({ limit: int.required(), used: nullable(int), remaining: nullable(int), resets_at: nullable(time) });

export const accountView = Joi.object({
  id: str.required(),
  name: str.required(),
  plan: str.valid('starter', 'pro', 'scale').required(),
  state: str.valid('active', 'read_only', 'suspended').required(),
  seats: int.min(0).required(),
  created_at: time.required(),
  limits: Joi.object({
    enforced: Joi.boolean().required(),
    degraded: Joi.boolean().required().description('true while Redis is away: the minute is counted per process and units are not charged'),
    seat_user_id: str.required(),
    calls_per_minute: limitUse.required(),
    units_per_day: limitUse.required(),
    webhook_endpoints_per_seat: Joi.object({ limit: int.required(), account_limit: int.required(), used: int.required() }).required(),
  }).required(),
  your_role: str.valid('owner', 'admin', 'member').required(),
}).id('Account');

export const approvalView = Joi.object({
  id: str.required(),
  action: str.required(),
  status: str.valid('pending', 'approved', 'denied', 'expired').required(),
  summary: str.required(),
  target: Joi.object({
    channel_id: str.required(), channel_name: nullable(str), channel_kind: nullable(str.valid('channel', 'dm')), ts: str.required(),
    exists: Joi.boolean().required(), author: nullable(str), can_read_channel: Joi.boolean().required(), text_preview: nullable(str.allow('')),
  }).required(),
  requested_by: Joi.object({
    user_id: str.required(), email: nullable(str), identity_id: str.required(), identity_kind: nullable(str), identity_name: nullable(str),
  }).required(),
  you_may_decide: Joi.boolean().required(),
  job_id: nullable(str),
  decided_by_user_id: nullable(str),
  created_at: time.required(),
  expires_at: time.required(),
  decided_at: nullable(time),
}).id('Approval');

export const approvalDecisionView = Joi.object({
  id: str.required(), action: str.required(), status: str.valid('pending', 'approved', 'denied', 'expired').required(),
  job_id: nullable(str), job_url: nullable(str), decided_at: nullable(time),
}).id('ApprovalDecision');

export const endpointHealthView = Joi.object({
  last_success_at: nullable(time), last_failure_at: nullable(time), success_rate_24h: nullable(Joi.number().min(0).max(1)),
  attempts_24h: int.min(0).required(), median_latency_ms: nullable(Joi.number().min(0)), pending_count: int.min(0).required(),
}).id('WebhookEndpointHealth');

const deliveryStatus = str.valid('pending', 'delivered', 'retrying', 'failed', 'dead');

export const testDeliveryView = Joi.object({
  delivery_id: nullable(str).description('The attempt (its X-Service-Delivery); null only when no attempt could be made.'),
  status: str.valid('delivered', 'failed').required(),
  response_status: nullable(int), latency_ms: nullable(Joi.number().min(0)), error: nullable(str),
}).id('TestDelivery');

export const manualDeliveryView = Joi.object({
  delivery_id: str.required(), status: deliveryStatus.required(), response_status: nullable(int), latency_ms: nullable(Joi.number().min(0)),
  error: nullable(str), next_retry_at: nullable(time),
}).id('ManualDelivery');

export const webhookEndpointView = Joi.object({
  id: str.required(),
  url: str.required(),
  events: Joi.array().items(str.valid(...SUBSCRIBABLE_EVENTS)).required(),
  channels: Joi.alternatives().try(str.valid('all'), Joi.array().items(str)).required(),
  payload: str.valid(...ENDPOINT_PAYLOAD_MODES).required(),
  enabled: Joi.boolean().required(),
  disabled_reason: nullable(str.valid('awaiting_enable', 'failing', 'gone', 'slow', 'manual')),
  secret_pending_reveal: Joi.boolean().required(),
  previous_valid_until: nullable(time),
  authorization_set: Joi.boolean().required(),
  created_by: str.required(),
  created_via: str.valid('web_session', 'api_key', 'agent_token').required(),
  version: int.min(1).required(),
  enabled_at: nullable(time),
  disabled_at: nullable(time),
  created_at: time.required(),
  updated_at: time.required(),
  health: endpointHealthView,
  secret: str.description('The signing secret: only in the answer of a web registration, reveal and rotate.'),
  test_delivery: testDeliveryView.description('Enabling delivers a test event first: its result.'),
}).id('WebhookEndpoint');

export const deliveryView = Joi.object({
  id: str.required(), event_id: str.required(), event_type: str.required(), kind: str.required(), attempt: int.min(1).required(),
  status: deliveryStatus.required(), next_retry_at: nullable(time), response_status: nullable(int), latency_ms: nullable(Joi.number().min(0)),
  error: nullable(str), created_at: time.required(), attempted_at: nullable(time),
}).id('WebhookDelivery');

export const reactionResult = Joi.object({ channel_id: str.required(), ts: str.required(), emoji: str.required(), by: str.required() }).id('ReactionResult');

export const signInView = Joi.object({
  session_token: str.required().description('Send as `Authorization: Bearer <session_token>` (no CSRF token then), or rely on the cookie.'),
  expires_at: time.required(),
  csrf_token: str.required().description('Send as `X-CSRF-Token` on every state-changing request authenticated by the cookie.'),
  user: Joi.object({ id: str.required(), email: str.required() }).required(),
  accounts: Joi.array().items(Joi.object({ id: str.required(), name: str.required(), role: str.required(), plan: str.required(), state: str.required() })).required(),
}).id('SignIn');

export const okView = Joi.object({ ok: Joi.boolean().valid(true).required() }).id('Ok');

export const livenessView = Joi.object({ status: str.valid('ok').required(), host: str.valid('api', 'web').required() }).id('Liveness');
export const readinessView = Joi.object({
  status: str.valid('ready', 'degraded', 'unavailable').required()
    .description('`degraded`: serving (200) while Redis is away, its limits counted in each process (docs/limits.md "When Redis is away")'),
  checks: Joi.object({
    postgres: str.valid('ok', 'failed').required(),
    redis: str.valid('ok', 'failed').required(),
    warm: str.valid('ok', 'pending').required().description('`pending` until the process has warmed up: pool open with its statements prepared, scripts loaded, code run once (docs/operations.md "Readiness")'),
  }).required(),
  shutting_down: Joi.boolean().valid(true),
  host: str.valid('api', 'web').required(),
}).id('Readiness');

/** A search hit: the message, and an excerpt of its text with the matched terms between U+E000 and U+E001. */
export const searchHitView = messageView.keys({
  highlight: str.allow('').required().description('An excerpt of the text around the match; each matched term is wrapped in U+E000 … U+E001 (docs/api.md "Search").'),
}).id('SearchHit');

export const fileView = Joi.object({
  id: str.required(),
  name: str.required(),
  size: int.min(0).required(),
  content_type: str.required(),
  state: str.valid('pending', 'ready').required(),
  sha256: nullable(str).description('Set when the upload completes.'),
  uploaded_by: str.required().description('The identity that uploaded it.'),
  created_at: time.required(),
  completed_at: nullable(time),
}).id('File');

export const uploadReservationView = Joi.object({
  file: fileView.required(),
  upload: Joi.object({
    url: str.required().description('PUT the bytes here (a signed URL: it is the only permission needed).'),
    method: str.valid('PUT').required(),
    headers: Joi.object().unknown(true).required().description('Send exactly these headers with the PUT.'),
    expires_at: time.required(),
  }).required(),
}).id('UploadReservation');

export const mirrorHealthView = Joi.object({
  last_success_at: nullable(time), last_failure_at: nullable(time), success_rate_24h: nullable(Joi.number().min(0).max(1)),
  attempts_24h: int.min(0).required(), pending_count: int.min(0).required(),
  paused_until: nullable(time).description('No message is sent before this (pacing, or the receiver\'s Retry-After); null when free.'),
}).id('MirrorHealth');

export const mirrorView = Joi.object({
  id: str.required(),
  url: str.required(),
  channels: Joi.array().items(str).required(),
  format: str.required(),
  enabled: Joi.boolean().required(),
  disabled_reason: nullable(str),
  created_by: str.required().description('The user whose memberships gate what the mirror sends (whoever last set its url).'),
  created_at: time.required(),
  health: nullable(mirrorHealthView),
}).id('Mirror');

export const mirrorDeliveryView = Joi.object({
  id: str.required(), kind: str.required(), attempt: int.min(0).required(), status: deliveryStatus.required(), line_count: int.min(0).required(),
  next_retry_at: nullable(time), response_status: nullable(int), latency_ms: nullable(Joi.number().min(0)), error: nullable(str),
  created_at: time.required(), attempted_at: nullable(time),
}).id('MirrorDelivery');

export const deliveryDetailView = deliveryView.keys({
  request: Joi.object({
    headers: Joi.object().unknown(true).required().description('The headers sent (the signature is described, not stored; a custom Authorization is masked).'),
    body: nullable(str).description('The exact body sent; null when withheld.'),
    body_withheld: str.valid('cannot_read_channel').description('Why `body` is null: the text is of a channel the caller cannot read.'),
  }).required(),
}).id('WebhookDeliveryDetail');

export const replayFailedCountView = Joi.object({
  since: time.required(), count: int.min(0).required(), replays_left_this_hour: int.min(0).required(), max: int.min(0).required(),
}).id('ReplayFailedCount');

export const replayFailedJobView = Joi.object({
  count: int.min(0).required(), job_id: str.required(), job_url: str.required(), job: jobView.required(),
}).id('ReplayFailedJob');

const statsBucket = Joi.object({
  start: time.required(), delivered: int.min(0).required(), failed: int.min(0).required(), dead: int.min(0).required(), other: int.min(0).required(),
});
export const endpointStatsView = Joi.object({
  window: str.valid('24h', '7d').required(),
  bucket: str.valid('hour').required(),
  from: time.required(),
  to: time.required(),
  buckets: Joi.array().items(statsBucket).required(),
  totals: Joi.object({ attempts: int.min(0).required(), delivered: int.min(0).required(), failed: int.min(0).required(), dead: int.min(0).required() }).required(),
  latency_ms: Joi.object({ p50: nullable(Joi.number()), p99: nullable(Joi.number()) }).required(),
}).id('WebhookEndpointStats');

export const createdApiKeyView = Joi.object({
  id: str.required(),
  key: str.description('The key: shown in this answer only (an Idempotency-Key replay answers without it).'),
  scopes: Joi.array().items(str).required(),
  read_only: Joi.boolean().required(),
  expires_at: nullable(time),
}).id('CreatedApiKey');

export const revokedView = Joi.object({ ok: Joi.boolean().valid(true).required(), id: str.required() }).id('Revoked');

export const usageView = Joi.object({
  plan: str.valid('starter', 'pro', 'scale').required(),
  limits: Joi.object({ calls_per_minute: int.required(), units_per_day: int.required() }).required(),
  units_reset_at: time.required(),
  degraded: Joi.boolean().required().description('true while Redis is away: the counts are null'),
  seats: Joi.array().items(Joi.object({
    user_id: str.required(), email: str.required(), role: str.valid('owner', 'admin', 'member').required(),
    calls_this_minute: nullable(int.min(0)), units_today: nullable(int.min(0)),
  })).required(),
}).id('Usage');
