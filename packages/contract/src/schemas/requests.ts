import Joi from 'joi';
import {
  MIRROR_FORMATS, MIRROR_LIMITS, STATS_WINDOWS, contentTypeSchema, fileIdSchema, fileNameSchema,
  CONTENT_LIMITS, ENDPOINT_LIMITS, SEARCH_SORTS, ENDPOINT_PAYLOAD_MODES, GRANTABLE_SCOPES, PASSWORD_MAX, SUBSCRIBABLE_EVENTS, TS_PATTERN,
  attachmentsSchema, channelNameSchema, clientRefSchema, emojiSchema, linksSchema, listQuerySchema, messageTextSchema, topicSchema,
  bodyBoolean, bodyNumber, dateOrDateTimeSchema, dateTimeSchema, isBlank, nonBlankString, queryInteger,
} from '@teamchat/core';

/**
 * The Joi schemas routes validate their input with (apps/api `validate`), shared by the route
 * declarations and so by the document. Input rules every schema shares (core `input-rules.ts`):
 * a body's numbers and booleans are JSON numbers and booleans (bodyNumber, bodyBoolean), a
 * query's whole numbers are digits (queryInteger), a date-time is strict RFC 3339
 * (dateTimeSchema), and blank means isBlank (invisible characters included).
 */

export { listQuerySchema };

/** Path ids: a malformed channel id simply finds nothing (404); a malformed ts is a 400. */
export const channelIdParam = Joi.string().max(80).required();
export const tsParam = Joi.string().pattern(TS_PATTERN).required()
  .messages({ 'string.pattern.base': '{{#label}} must look like "1700000000.000001"' });

export const channelParams = { channelId: channelIdParam };
export const messageParams = { channelId: channelIdParam, ts: tsParam };
export const reactionParams = { ...messageParams, emoji: emojiSchema.required() };
export const threadParams = { channelId: channelIdParam, threadTs: tsParam };
export const jobParams = { jobId: Joi.string().max(64).required() };
export const approvalParams = { approvalId: Joi.string().max(64).required() };
export const endpointParams = { endpointId: Joi.string().max(80).required() };
export const deliveryParams = { ...endpointParams, deliveryId: Joi.string().max(80).required() };

/** The delivery log's filters (docs/web.md, "Delivery log"): `status` is a comma-separated list of statuses. */
const DELIVERY_STATUSES = ['pending', 'delivered', 'retrying', 'failed', 'dead'];
export const deliveryLogQuery = {
  ...listQuerySchema,
  status: Joi.string().max(100).custom((v: string, helpers) => {
    const list = v.split(',').map((s) => s.trim()).filter(Boolean);
    return list.every((s) => DELIVERY_STATUSES.includes(s)) ? list : helpers.error('any.invalid');
  }).messages({ 'any.invalid': `{{#label}} must be a comma-separated list of ${DELIVERY_STATUSES.join(', ')}` }),
  event_type: Joi.string().max(64),
  event_id: Joi.string().max(80),
  since: dateTimeSchema,
  until: dateTimeSchema,
};

export const signInBody = {
  email: Joi.string().email({ tlds: false }).max(320).required(),
  password: Joi.string().max(PASSWORD_MAX).required(),
};

export const registerAgentBody = {
  name: nonBlankString().max(80).required(),
  scopes: Joi.array().items(Joi.string().valid(...GRANTABLE_SCOPES, 'channels:read', 'channels:write')).max(32).unique().default([]),
  client_ref: Joi.string().max(128),
};

export const createChannelBody = {
  name: channelNameSchema.required(),
  topic: topicSchema,
  client_ref: clientRefSchema,
};
export const patchChannelBody = Joi.object({ name: channelNameSchema, topic: topicSchema }).or('name', 'topic');
export const addMemberBody = { identity_id: Joi.string().max(80).required(), client_ref: clientRefSchema };

export const openDmBody = {
  members: Joi.array().items(Joi.string().max(80)).min(1).max(CONTENT_LIMITS.dmOthers).unique().required(),
  client_ref: clientRefSchema,
};

/** A message needs non-blank text (isBlank) or at least one attachment; the refusal names `text`, as an edit's does. */
const needsContent = (value: { text?: string; attachments?: unknown[] }, helpers: Joi.CustomHelpers) =>
  isBlank(value.text ?? '') && (value.attachments ?? []).length === 0
    ? helpers.error('message.empty', {}, helpers.state.localize?.([...(helpers.state.path ?? []), 'text']))
    : value;

export const postMessageBody = Joi.object({
  text: messageTextSchema.default(''),
  attachments: attachmentsSchema,
  links: linksSchema,
  thread_ts: tsParam.optional(),
  client_ref: clientRefSchema,
}).custom(needsContent).messages({ 'message.empty': 'a message needs visible text or at least one attachment' });

export const patchMessageBody = Joi.object({
  text: messageTextSchema,
  attachments: attachmentsSchema,
  links: linksSchema,
  version: bodyNumber().integer().min(1).max(2_147_483_647), // the column is a PostgreSQL integer
}).or('text', 'attachments', 'links');

export const searchQuery = {
  ...listQuerySchema,
  q: nonBlankString().max(200).required(),
  sort: Joi.string().valid(...SEARCH_SORTS).default('relevance'),
  channel: Joi.string().pattern(/^ch_[a-z0-9]{1,64}$/),
  from: Joi.string().pattern(/^idn_[a-z0-9]{1,64}$/),
  after: dateOrDateTimeSchema,
  before: dateOrDateTimeSchema,
};

/**
 * Register/change payload (spec: Webhooks, "Webhook endpoint payload on register/change").
 * The URL's form, scheme and addresses are the URL guard's (core), so its refusal carries a reason.
 */
const url = Joi.string().trim().min(1).max(ENDPOINT_LIMITS.urlMaxLength);
const events = Joi.array().items(Joi.string().valid(...SUBSCRIBABLE_EVENTS)).min(1).max(ENDPOINT_LIMITS.maxEvents).unique();
const channels = Joi.alternatives().try(
  Joi.string().valid('all'),
  Joi.array().items(Joi.string().max(80)).min(1).max(ENDPOINT_LIMITS.maxChannels).unique(),
).messages({ 'alternatives.match': '{{#label}} must be "all" or a list of channel ids' });
const payload = Joi.string().valid(...ENDPOINT_PAYLOAD_MODES);
/** The custom header's value, sent as `Authorization: Bearer <value>`: visible ASCII, no spaces; null clears it. */
const authorization = Joi.string().max(ENDPOINT_LIMITS.authorizationMaxLength).pattern(/^[\x21-\x7e]+$/).allow(null)
  .messages({ 'string.pattern.base': '{{#label}} must be a token of visible ASCII characters without spaces' });

export const registerEndpointBody = {
  url: url.required(),
  events: events.required(),
  channels: channels.required(),
  payload: payload.default('pointers'),
  enabled: bodyBoolean(),
  authorization,
};

export const patchEndpointBody = Joi.object({ url, events, channels, payload, enabled: bodyBoolean(), authorization })
  .min(1)
  .messages({ 'object.min': 'the body must change at least one of url, events, channels, payload, enabled, authorization' });

/** A file's reservation (docs/api.md "Files"): its name, exact size and content type. */
export const reserveUploadBody = Joi.object({
  name: fileNameSchema.required(),
  size: bodyNumber().integer().min(1).max(Number.MAX_SAFE_INTEGER).required(),
  content_type: contentTypeSchema.required(),
});
export const fileParams = { fileId: fileIdSchema.required() };
/** The local driver's signed upload URL: the query is the permission. */
export const uploadTargetQuery = {
  expires: queryInteger().min(0).max(2 ** 40).required(),
  signature: Joi.string().pattern(/^[A-Za-z0-9_-]{43}$/).required(),
};

/**
 * Mirror create/change payloads (docs/mirrors.md "API"). The URL's form, scheme and addresses
 * are the URL guard's (core), so its refusal carries a reason; channel rules (channels only,
 * readable by the creator) are core's too.
 */
const mirrorUrl = Joi.string().trim().min(1).max(MIRROR_LIMITS.urlMaxLength);
const mirrorChannels = Joi.array().items(Joi.string().max(80)).min(1).max(MIRROR_LIMITS.maxChannels).unique();
const mirrorFormat = Joi.string().valid(...MIRROR_FORMATS);
export const createMirrorBody = {
  url: mirrorUrl.required(),
  channels: mirrorChannels.required(),
  format: mirrorFormat.required(),
  enabled: bodyBoolean(),
};
export const patchMirrorBody = Joi.object({ url: mirrorUrl, channels: mirrorChannels, format: mirrorFormat, enabled: bodyBoolean() })
  .min(1)
  .messages({ 'object.min': 'the body must change at least one of url, channels, format, enabled' });
export const mirrorParams = { mirrorId: Joi.string().max(80).required() };

/** "Replay failed since…" (docs/web.md): failed and dead deliveries since this time. */
export const replayFailedQuery = { since: dateTimeSchema.required() };
export const replayFailedBody = { since: dateTimeSchema.required() };
export const statsQuery = { window: Joi.string().valid(...Object.keys(STATS_WINDOWS)).default('24h') };

/** A key for the caller's own seat (docs/web.md "API keys"): scopes up to their role. */
export const createApiKeyBody = {
  scopes: Joi.array().items(Joi.string().valid(...GRANTABLE_SCOPES, 'channels:read', 'channels:write')).max(32).unique().default([]),
  read_only: bodyBoolean().default(false),
  expires_in_days: bodyNumber().integer().min(1).max(3650),
};
export const apiKeyParams = { keyId: Joi.string().max(64).required() };
