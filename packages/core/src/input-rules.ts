import Joi from 'joi';

/**
 * Input rules every request schema shares (docs/api.md "Hostile input", "Strict input types"):
 * what a number, a boolean and a date-time must look like, and when a text counts as blank.
 * The API validates with Joi's `convert: true` (a query string is all strings, and a date
 * arrives as text), so each rule below says itself how far conversion may go.
 */

/**
 * A number in a JSON body: a JSON number, never a string that looks like one (`"30"` is refused).
 * `strict()` turns conversion off for this value only; the rest of the body keeps trimming.
 */
export const bodyNumber = (): Joi.NumberSchema => Joi.number().strict();

/** A boolean in a JSON body: `true` or `false`, never `"true"`, `"false"`, `1` or `0`. */
export const bodyBoolean = (): Joi.BooleanSchema => Joi.boolean().strict();

/**
 * A whole number in the query string: ASCII digits only (`^\d+$`), checked on the text as sent,
 * then converted. Joi alone would read `" 5 "` as 5, `2e1` as 20 and `+5` as 5.
 */
export const queryInteger = (): Joi.NumberSchema => Joi.number().integer()
  .custom((value: number, helpers) =>
    typeof helpers.original === 'string' && !/^\d+$/.test(helpers.original) ? helpers.error('number.digits') : value)
  .messages({ 'number.digits': '{{#label}} must be written with the digits 0-9 only' });

/** The earliest and latest instant a date-time input may name (inclusive). */
export const DATE_TIME_MIN = new Date('1970-01-01T00:00:00.000Z');
export const DATE_TIME_MAX = new Date('9999-12-31T23:59:59.999Z');

/** RFC 3339 `date-time`, upper-case `T` and `Z`, 1..9 fraction digits, offset `Z` or `±hh:mm`. */
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:Z|([+-])(\d{2}):(\d{2}))$/;

/**
 * The instant an RFC 3339 date-time names, or null when the text is not one (wrong form, a day the
 * month lacks, hour 24, leap second 60, offset beyond ±23:59) or falls outside
 * DATE_TIME_MIN..DATE_TIME_MAX. Fractions beyond milliseconds are truncated.
 */
export function parseDateTime(text: string): Date | null {
  const m = RFC3339.exec(text);
  if (!m) return null;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number);
  const ms = Number((m[7] ?? '').padEnd(3, '0').slice(0, 3));
  const offset = m[8] ? (m[8] === '-' ? -1 : 1) * (Number(m[9]) * 60 + Number(m[10])) : 0;
  if (month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 59) return null;
  if (m[8] && (Number(m[9]) > 23 || Number(m[10]) > 59)) return null;
  const daysInMonth = [31, isLeap(year) ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1];
  if (day > daysInMonth) return null;
  // setUTCFullYear, not Date.UTC, which reads years 0..99 as 1900..1999
  const local = new Date(0);
  local.setUTCFullYear(year, month - 1, day);
  local.setUTCHours(hour, minute, second, ms);
  const date = new Date(local.getTime() - offset * 60_000);
  return date < DATE_TIME_MIN || date > DATE_TIME_MAX ? null : date;
}

const isLeap = (y: number) => (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;

/** A date alone, `YYYY-MM-DD`. */
const DATE_ALONE = /^\d{4}-\d{2}-\d{2}$/;

/**
 * A date-time input converted to a Date by parseDateTime; with `dateAlone`, `YYYY-MM-DD` too,
 * meaning that day's first instant in UTC. `Joi.date().iso()` stays the base so the OpenAPI
 * document says `format: date-time`; Joi's own ISO check alone also takes `2024-01-01 10:00`
 * (read as UTC), `+275760-…` years and February 30 (read as March 1).
 */
function dateInput(dateAlone: boolean, message: string): Joi.DateSchema {
  return Joi.date().iso()
    .custom((_value: Date, helpers) => {
      const text = typeof helpers.original === 'string' ? helpers.original : '';
      return parseDateTime(dateAlone && DATE_ALONE.test(text) ? `${text}T00:00:00Z` : text) ?? helpers.error('date.rfc3339');
    })
    .messages({ 'date.base': message, 'date.format': message, 'date.rfc3339': message });
}

/**
 * A date-time input (query or body): strict RFC 3339 within 1970-01-01T00:00:00Z..
 * 9999-12-31T23:59:59.999Z, so that every date the API echoes back (`toISOString()`) is again a
 * plain `YYYY-MM-DDThh:mm:ss.sssZ`.
 */
export const dateTimeSchema = dateInput(false, '{{#label}} must be an RFC 3339 date-time such as 2024-01-31T09:30:00Z or '
  + '2024-01-31T10:30:00+01:00, between 1970-01-01T00:00:00Z and 9999-12-31T23:59:59.999Z');

/**
 * A search bound: a date-time as dateTimeSchema, or a date alone (`2024-01-31`, a real calendar
 * day) meaning that day's first instant in UTC, as people write search filters (Slack's
 * `after:2024-01-31`, GitHub's `created:>2024-01-31`).
 */
export const dateOrDateTimeSchema = dateInput(true, '{{#label}} must be a date such as 2024-01-31 or an RFC 3339 date-time such as '
  + '2024-01-31T09:30:00Z, between 1970-01-01 and 9999-12-31');

/**
 * Characters that show nothing on their own, counted as blank beside white space (`\s`, what
 * String.trim() removes): format characters (\p{Cf}: soft hyphen, ZWSP, ZWNJ, ZWJ, bidi marks,
 * word joiner, BOM, tag characters…), U+2800 braille pattern blank, and the Hangul fillers
 * U+115F, U+1160, U+3164, U+FFA0. A text made only of these would post an empty-looking message.
 */
const BLANK = /^[\s\p{Cf}\u2800\u115F\u1160\u3164\uFFA0]*$/u;

/** Whether a text is blank: empty, or only white space and invisible characters (BLANK). */
export function isBlank(text: string): boolean {
  return BLANK.test(text);
}

/**
 * A text field that must not be blank (isBlank), trimmed of white space like `Joi.string().trim()`.
 * Chain `.max()` and `.required()` as usual.
 */
export const nonBlankString = (): Joi.StringSchema => Joi.string().trim().min(1)
  .custom((value: string, helpers) => (isBlank(value) ? helpers.error('string.blank') : value))
  .messages({ 'string.blank': '{{#label}} must contain a visible character' });
