import { createHmac, randomBytes } from 'node:crypto';
import { memoBounded } from '../bounded-memo';

/**
 * Webhook signing: the one place that knows both signature schemes.
 *
 * - `X-Service-Signature: t=<unix>,v1=<hex>[,v1=<hex>]`: HMAC-SHA256 over `<t>.<raw body>`, keyed
 *   with the endpoint's WHOLE secret string as UTF-8 bytes (the widespread t=,v1= scheme, so stock
 *   verifiers such as Stripe's accept it). During rotation two v1 values, current secret first.
 * - Standard Webhooks (`webhook-id`, `webhook-timestamp`, `webhook-signature: v1,<base64>`):
 *   HMAC-SHA256 over `<id>.<t>.<raw body>`, keyed with the base64-decoded part of the secret
 *   after `whsec_`, so the `standardwebhooks` and `svix` packages verify it.
 */
export const SECRET_PREFIX = 'whsec_';

/** `whsec_` + base64 of 32 random bytes. */
export function generateSigningSecret(): string {
  return SECRET_PREFIX + randomBytes(32).toString('base64');
}

/** Standard Webhooks keys by secret, decoded once per secret (bounded). */
const standardKeys = new Map<string, Buffer>();

function standardKey(secret: string): Buffer {
  return memoBounded(standardKeys, 10_000, secret, (s) => Buffer.from(s.startsWith(SECRET_PREFIX) ? s.slice(SECRET_PREFIX.length) : s, 'base64'));
}

export interface SignatureInput {
  /** the signing secrets, current first (two during a rotation's overlap) */
  secrets: readonly string[];
  /** the raw body exactly as sent */
  body: string;
  /** the event id (`evt_...`), sent as `webhook-id` */
  eventId: string;
  /** unix seconds */
  timestamp: number;
}

export function signatureHeaders({ secrets, body, eventId, timestamp }: SignatureInput): Record<string, string> {
  if (secrets.length === 0) throw new Error('signatureHeaders needs at least one secret');
  const t = String(timestamp);
  const v1 = secrets.map((s) => `v1=${createHmac('sha256', s).update(`${t}.${body}`).digest('hex')}`);
  const std = secrets.map((s) => `v1,${createHmac('sha256', standardKey(s)).update(`${eventId}.${t}.${body}`).digest('base64')}`);
  return {
    'x-service-signature': `t=${t},${v1.join(',')}`,
    'webhook-id': eventId,
    'webhook-timestamp': t,
    'webhook-signature': std.join(' '),
  };
}
