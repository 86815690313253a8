import Joi from 'joi';
import { MIRROR_FORMATS, MIRROR_LIMITS } from '@teamchat/core';

/**
 * Mirror create/change payloads (docs/mirrors.md "API"). The URL's form, scheme and addresses
 * are the URL guard's (core), so its refusal carries a reason; channel rules (channels only,
 * readable by the creator) are core's too.
 */
const url = Joi.string().trim().min(1).max(MIRROR_LIMITS.urlMaxLength);
const channels = Joi.array().items(Joi.string().max(80)).min(1).max(MIRROR_LIMITS.maxChannels).unique();
const format = Joi.string().valid(...MIRROR_FORMATS);

export const createMirrorBody = {
  url: url.required(),
  channels: channels.required(),
  format: format.required(),
  enabled: Joi.boolean(),
};

export const patchMirrorBody = Joi.object({ url, channels, format, enabled: Joi.boolean() })
  .min(1)
  .messages({ 'object.min': 'the body must change at least one of url, channels, format, enabled' });

export const mirrorParams = { mirrorId: Joi.string().max(80).required() };
