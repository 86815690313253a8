import Joi from 'joi';
import { bodyNumber } from '../input-rules';

/**
 * Content limits, enforced at the edge with 400 invalid_request (docs/api.md "Content limits").
 * Text is capped in UTF-8 bytes so that any message fits a `text`-mode webhook body as posted.
 */
export const CONTENT_LIMITS = {
  /** message text, UTF-8 bytes (spec: text payload mode carries up to 16 KB) */
  textBytes: 16 * 1024,
  /** attachments per message */
  attachments: 10,
  /** attached links per message */
  links: 20,
  /** characters of a URL (link or attachment) */
  urlChars: 2048,
  /** channel name: lowercase letters, digits, '-', '_', '.'; 1..80 characters */
  channelName: /^[a-z0-9][a-z0-9._-]{0,79}$/,
  /** channel topic characters */
  topicChars: 250,
  /** emoji name, Slack style: lowercase letters, digits, '_', '+', '-'; 1..64 characters */
  emoji: /^[a-z0-9_+-]{1,64}$/,
  /** client_ref characters */
  clientRefChars: 128,
  /** other identities in one direct message (so at most 9 members with the caller) */
  dmOthers: 8,
} as const;

export const messageTextSchema = Joi.string()
  .allow('')
  .custom((value: string, helpers) =>
    Buffer.byteLength(value, 'utf8') > CONTENT_LIMITS.textBytes ? helpers.error('string.maxBytes') : value)
  .messages({ 'string.maxBytes': `{{#label}} must be at most ${CONTENT_LIMITS.textBytes} bytes (UTF-8)` });

const url = Joi.string().uri({ scheme: ['http', 'https'] }).max(CONTENT_LIMITS.urlChars);

export const attachmentSchema = Joi.object({
  title: Joi.string().max(256),
  url,
  file_id: Joi.string().pattern(/^[A-Za-z0-9_-]{1,64}$/),
  mime_type: Joi.string().max(127),
  size: bodyNumber().integer().min(0),
}).or('url', 'file_id');

export const attachmentsSchema = Joi.array().items(attachmentSchema).max(CONTENT_LIMITS.attachments);
export const linksSchema = Joi.array().items(url).max(CONTENT_LIMITS.links);
export const clientRefSchema = Joi.string().max(CONTENT_LIMITS.clientRefChars);
export const channelNameSchema = Joi.string().trim().lowercase().pattern(CONTENT_LIMITS.channelName)
  .messages({ 'string.pattern.base': '{{#label}} must be 1-80 lowercase letters, digits, ".", "-" or "_", starting with a letter or digit' });
export const topicSchema = Joi.string().trim().allow('').max(CONTENT_LIMITS.topicChars);
export const emojiSchema = Joi.string().pattern(CONTENT_LIMITS.emoji)
  .messages({ 'string.pattern.base': '{{#label}} must be 1-64 of a-z, 0-9, "_", "+", "-"' });

export type Attachment = { title?: string; url?: string; file_id?: string; mime_type?: string; size?: number };
