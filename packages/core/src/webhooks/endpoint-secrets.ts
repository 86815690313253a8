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

export function openWebhookSecret(config: Pick<Config, 'secretsKey'>, sealed: string): string {
  return decryptSecret(keyOf(config), sealed);
}
