import Joi from 'joi';

/** How long an upload URL accepts its PUT (and the `expires_at` shown with it). */
export const UPLOAD_URL_TTL_MS = 60 * 60_000;
/** A reservation not completed within this is removed, bytes included, by the maintenance job. */
export const PENDING_FILE_TTL_MS = 24 * 60 * 60_000;

/** 1..255 characters, no path separator, no control character, not `.` or `..`. */
export const fileNameSchema = Joi.string()
  .min(1).max(255)
  // eslint-disable-next-line no-control-regex
  .pattern(/^[^/\\\u0000-\u001f\u007f-\u009f]+$/)
  .invalid('.', '..')
  .messages({
    'string.pattern.base': '{{#label}} must not contain a path separator ("/" or "\\") or a control character',
    'any.invalid': '{{#label}} must not be "." or ".."',
  });

/** `type/subtype` (RFC 6838 characters), parameters not kept; stored lower-case. */
export const contentTypeSchema = Joi.string().trim().lowercase().max(127)
  .pattern(/^[a-z0-9][a-z0-9!#$&^_.+-]{0,63}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,63}$/)
  .messages({ 'string.pattern.base': '{{#label}} must be a media type like image/png, without parameters' });

export const fileIdSchema = Joi.string().pattern(/^file_[a-z0-9]{1,64}$/);

/**
 * Media types a browser runs or renders as a document (HTML, SVG, XML, scripts): never stored.
 * The bytes are always served as an attachment with nosniff and a sandbox CSP, and this keeps
 * such a type out of every other client too.
 */
export function isDangerousType(type: string): boolean {
  return /^(text\/html|application\/xhtml\+xml|image\/svg\+xml|text\/xml|application\/xml|text\/xsl|application\/xslt\+xml|text\/(x-)?javascript|application\/(x-)?javascript|text\/ecmascript|application\/ecmascript)$/.test(type)
    || type.endsWith('+xml');
}

/**
 * The content type a completed file is stored with (docs/api.md "Files"): what the first bytes
 * say when `file-type` recognises them (the bytes decide, whatever was declared); otherwise the
 * declared type, unless it is a dangerous one, which becomes application/octet-stream.
 */
export function storedContentType(declared: string, sniffed: string | undefined): string {
  if (sniffed) return isDangerousType(sniffed) ? 'application/octet-stream' : sniffed;
  return isDangerousType(declared) ? 'application/octet-stream' : declared;
}
