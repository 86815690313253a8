import type { Config } from '../config';
import { memoBounded } from '../bounded-memo';
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

/** Opens a sealed secret or header value (reveal, and anything else that is not the delivery path). */
export function openWebhookSecret(config: Pick<Config, 'secretsKey'>, sealed: string): string {
  return decryptSecret(keyOf(config), sealed);
}

/** The delivery path's opened values, per key, by their sealed text (see openForDelivery). */
const opened = new WeakMap<Buffer, Map<string, string>>();

/**
 * openWebhookSecret for the delivery path only: every round opens each of its endpoints' secrets
 * and header, and AES-GCM per endpoint per round was a visible share of a delivery's CPU, so
 * what it opened is kept in this process's memory (bounded) by its sealed text. A rotated secret
 * or a new header value is a new sealed text, never served stale. Paths that show a secret
 * (reveal) open it with openWebhookSecret and keep nothing.
 */
export function openForDelivery(config: Pick<Config, 'secretsKey'>, sealed: string): string {
  const key = keyOf(config);
  let byText = opened.get(key);
  if (!byText) {
    byText = new Map();
    opened.set(key, byText);
  }
  return memoBounded(byText, 10_000, sealed, (s) => decryptSecret(key, s));
}
