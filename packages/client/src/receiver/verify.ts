import { createHmac, timingSafeEqual } from 'node:crypto';
import { WebhookVerificationError } from './errors';
import type { WebhookEvent } from './events';

/**
 * Verifies a webhook delivery (docs/webhooks.md, "Verifying a delivery"). Both schemes the
 * service sends are accepted; either one verifying is enough:
 * - `X-Service-Signature: t=<unix>,v1=<hex>[,v1=<hex>]`: HMAC-SHA256 over `<t>.<raw body>`, keyed
 *   with the whole secret string (UTF-8);
 * - Standard Webhooks (`webhook-id`, `webhook-timestamp`, `webhook-signature: v1,<base64> …`):
 *   HMAC-SHA256 over `<id>.<t>.<raw body>`, keyed with the base64 part of a `whsec_` secret.
 * Every signature is compared with every secret (both during a rotation's overlap), each in
 * constant time. The signature is checked before the timestamp, so `stale_timestamp` means
 * "genuine but too old" (a replay), never "forged".
 */
export type HeaderBag =
  | Readonly<Record<string, string | readonly string[] | undefined>>
  | { get(name: string): string | null };

export interface VerifyDeliveryInput {
  /** the body exactly as received, before any JSON parsing */
  rawBody: string | Uint8Array;
  /** node's `req.headers`, Express's, or a Fetch `Headers` */
  headers: HeaderBag;
  /** the endpoint's signing secret(s) (`whsec_…`); during a rotation give both */
  secrets: string | readonly string[];
  /** the most a timestamp may differ from `now`, in seconds; default 300 (5 minutes) */
  toleranceSeconds?: number;
  /** the receiver's clock; default the current time */
  now?: Date;
}

export const DEFAULT_TOLERANCE_SECONDS = 300;
const SECRET_PREFIX = 'whsec_';
const SHA256_BYTES = 32;

export type SignatureScheme = 'x-service-signature' | 'standard-webhooks';

export interface VerifiedDelivery<E = WebhookEvent> {
  event: E;
  /** the scheme that verified */
  scheme: SignatureScheme;
  /** the signed timestamp, unix seconds */
  timestamp: number;
}

/** Verifies and parses a delivery; throws WebhookVerificationError (with its `reason`) otherwise. */
export function verifyDelivery<E = WebhookEvent>(input: VerifyDeliveryInput): E {
  return verifyDeliveryDetailed<E>(input).event;
}

/** The same, also saying which scheme verified and the signed timestamp. */
export function verifyDeliveryDetailed<E = WebhookEvent>(input: VerifyDeliveryInput): VerifiedDelivery<E> {
  const secrets = (typeof input.secrets === 'string' ? [input.secrets] : [...input.secrets]).filter((s) => typeof s === 'string' && s.length > 0);
  if (secrets.length === 0) throw new WebhookVerificationError('no_secret', 'No signing secret was given to verify with.');
  const body = typeof input.rawBody === 'string' ? Buffer.from(input.rawBody, 'utf8') : Buffer.from(input.rawBody.buffer, input.rawBody.byteOffset, input.rawBody.byteLength);
  const tolerance = input.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  const nowSeconds = Math.floor((input.now ?? new Date()).getTime() / 1000);

  const ours = header(input.headers, 'x-service-signature', ',');
  const stdSignature = header(input.headers, 'webhook-signature', ' ');
  if (ours === null && stdSignature === null) {
    throw new WebhookVerificationError('no_signature', 'The delivery carries no X-Service-Signature and no webhook-signature header.');
  }
  // Each present scheme is tried; the first one's failure is the one reported.
  let failure: WebhookVerificationError | null = null;
  const attempts: Array<() => VerifiedDelivery<E>> = [];
  if (ours !== null) attempts.push(() => checkServiceSignature<E>(ours, body, secrets, nowSeconds, tolerance));
  if (stdSignature !== null) {
    attempts.push(() => checkStandardWebhooks<E>(stdSignature, header(input.headers, 'webhook-id', ','), header(input.headers, 'webhook-timestamp', ','), body, secrets, nowSeconds, tolerance));
  }
  for (const attempt of attempts) {
    try {
      return attempt();
    } catch (err) {
      if (!(err instanceof WebhookVerificationError)) throw err;
      failure ??= err;
    }
  }
  throw failure!;
}

function checkServiceSignature<E>(value: string, body: Buffer, secrets: string[], now: number, tolerance: number): VerifiedDelivery<E> {
  let t: number | null = null;
  const signatures: string[] = [];
  for (const part of value.split(',')) {
    const eq = part.indexOf('=');
    if (eq <= 0) throw new WebhookVerificationError('malformed_header', 'X-Service-Signature is not of the form t=<unix>,v1=<hex>.');
    const key = part.slice(0, eq).trim();
    const val = part.slice(eq + 1).trim();
    if (key === 't') {
      if (t !== null || !/^\d{1,12}$/.test(val)) throw new WebhookVerificationError('malformed_header', 'X-Service-Signature has a missing, repeated or non-numeric t.');
      t = Number(val);
    } else if (key === 'v1') {
      signatures.push(val);
    } // other schemes (v0…) are ignored, as stock t=,v1= verifiers do
  }
  if (t === null) throw new WebhookVerificationError('malformed_header', 'X-Service-Signature has no t=<unix>.');
  if (signatures.length === 0) throw new WebhookVerificationError('malformed_header', 'X-Service-Signature has no v1 signature.');
  const given = signatures.map((s) => (/^[0-9a-f]{64}$/i.test(s) ? Buffer.from(s, 'hex') : null));
  const expected = secrets.map((s) => createHmac('sha256', Buffer.from(s, 'utf8')).update(`${t}.`).update(body).digest());
  if (!anyMatch(given, expected)) throw new WebhookVerificationError('bad_signature', 'No v1 signature of X-Service-Signature matches the secret(s).');
  checkTimestamp(t, now, tolerance);
  return { event: parseEvent<E>(body), scheme: 'x-service-signature', timestamp: t };
}

function checkStandardWebhooks<E>(
  value: string, id: string | null, timestamp: string | null, body: Buffer, secrets: string[], now: number, tolerance: number,
): VerifiedDelivery<E> {
  if (!id) throw new WebhookVerificationError('malformed_header', 'webhook-signature is present but webhook-id is missing.');
  if (!timestamp || !/^\d{1,12}$/.test(timestamp.trim())) throw new WebhookVerificationError('malformed_header', 'webhook-timestamp is missing or not unix seconds.');
  const t = Number(timestamp.trim());
  const given: Array<Buffer | null> = [];
  for (const entry of value.split(' ').filter(Boolean)) {
    const comma = entry.indexOf(',');
    if (comma <= 0) throw new WebhookVerificationError('malformed_header', 'webhook-signature entries must be <version>,<base64>.');
    if (entry.slice(0, comma) !== 'v1') continue; // other versions (v1a: asymmetric) are not ours
    const b64 = entry.slice(comma + 1);
    given.push(/^[A-Za-z0-9+/]+={0,2}$/.test(b64) ? Buffer.from(b64, 'base64') : null);
  }
  if (given.length === 0) throw new WebhookVerificationError('malformed_header', 'webhook-signature has no v1 signature.');
  const expected = secrets.map((s) => createHmac('sha256', standardKey(s)).update(`${id}.${t}.`).update(body).digest());
  if (!anyMatch(given, expected)) throw new WebhookVerificationError('bad_signature', 'No v1 signature of webhook-signature matches the secret(s).');
  checkTimestamp(t, now, tolerance);
  return { event: parseEvent<E>(body), scheme: 'standard-webhooks', timestamp: t };
}

/** The Standard Webhooks key: the base64 part of a `whsec_` secret, decoded. */
function standardKey(secret: string): Buffer {
  return Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, 'base64');
}

/** Compares every given signature with every expected one, each in constant time, without stopping early. */
function anyMatch(given: Array<Buffer | null>, expected: Buffer[]): boolean {
  let match = false;
  for (const g of given) {
    if (!g || g.length !== SHA256_BYTES) continue;
    for (const e of expected) if (timingSafeEqual(g, e)) match = true;
  }
  return match;
}

function checkTimestamp(t: number, now: number, tolerance: number): void {
  if (Math.abs(now - t) > tolerance) {
    throw new WebhookVerificationError('stale_timestamp', `The signed timestamp ${t} is more than ${tolerance} s from the receiver's clock (${now}).`);
  }
}

function parseEvent<E>(body: Buffer): E {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    throw new WebhookVerificationError('malformed_body', 'The signed body is not JSON.');
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed) || typeof (parsed as { id?: unknown }).id !== 'string' || typeof (parsed as { type?: unknown }).type !== 'string') {
    throw new WebhookVerificationError('malformed_body', 'The signed body is not an event object (id and type).');
  }
  return parsed as E;
}

/** One header's value, whatever the bag's shape; repeated headers joined with `sep`. */
function header(bag: HeaderBag, name: string, sep: string): string | null {
  if (typeof (bag as { get?: unknown }).get === 'function') {
    const v = (bag as { get(name: string): string | null }).get(name);
    return v === null || v === undefined ? null : v;
  }
  const record = bag as Readonly<Record<string, string | readonly string[] | undefined>>;
  let v = record[name];
  if (v === undefined) {
    const key = Object.keys(record).find((k) => k.toLowerCase() === name);
    v = key === undefined ? undefined : record[key];
  }
  if (v === undefined) return null;
  return typeof v === 'string' ? v : v.join(sep);
}
