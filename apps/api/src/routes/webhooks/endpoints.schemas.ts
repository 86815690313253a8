import Joi from 'joi';
import { ENDPOINT_LIMITS, ENDPOINT_PAYLOAD_MODES, SUBSCRIBABLE_EVENTS } from '@teamchat/core';

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

export const registerBody = {
  url: url.required(),
  events: events.required(),
  channels: channels.required(),
  payload: payload.default('pointers'),
  enabled: Joi.boolean(),
  authorization,
};

export const patchBody = Joi.object({ url, events, channels, payload, enabled: Joi.boolean(), authorization })
  .min(1)
  .messages({ 'object.min': 'the body must change at least one of url, events, channels, payload, enabled, authorization' });

export const endpointParams = { endpointId: Joi.string().max(80).required() };
