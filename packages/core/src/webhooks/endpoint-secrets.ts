import type { Config } from '../config';
import { decryptSecret, deriveKey, encryptSecret } from '../crypto';

/**
 * Signing secrets and the custom Authorization value of webhook endpoints are kept AES-GCM
 * sealed (core crypto) under a key derived for this one purpose from SECRETS_KEY.
 */
const PURPOSE = 'webhook-secrets';

const keys = new WeakMap<object, Buffer>();
function keyOf(config: Pick<Config, 'secretsKey'>): Buffer {
  let key = keys.get(config);
  if (!key) {
    key = deriveKey(config.secretsKey, PURPOSE);
    keys.set(config, key);
  }
  return key;
}

export function sealWebhookSecret(config: Pick<Config, 'secretsKey'>, plaintext: string): string {
  return encryptSecret(keyOf(config), plaintext);
}

/**
 * Opened secrets by their sealed text, per key: every round opens each of its endpoints' secrets,
 * and AES-GCM per endpoint per round was a visible share of a delivery's CPU. A rotated secret
 * or a new header value is a new sealed text, so it is never served stale; the map is dropped
 * whole when it grows past OPENED_MAX.
 */
const opened = new WeakMap<Buffer, Map<string, string>>();
const OPENED_MAX = 10_000;

export function openWebhookSecret(config: Pick<Config, 'secretsKey'>, sealed: string): string {
  const key = keyOf(config);
  let byText = opened.get(key);
  if (!byText) {
    byText = new Map();
    opened.set(key, byText);
  }
  let plain = byText.get(sealed);
  if (plain === undefined) {
    plain = decryptSecret(key, sealed);
    if (byText.size >= OPENED_MAX) byText.clear();
    byText.set(sealed, plain);
  }
  return plain;
}
