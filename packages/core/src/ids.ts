import { randomBytes, randomFillSync } from 'node:crypto';

const ALPHABET = '0123456789abcdefghijklmnopqrstuvwxyz';

/** Random base36 string of `length` characters (about 5.17 bits each), from fresh bytes: secrets use this. */
export function randomToken(length: number): string {
  const bytes = randomBytes(length);
  let out = '';
  for (let i = 0; i < length; i++) out += ALPHABET[bytes[i] % 36];
  return out;
}

/**
 * Bytes for ids (not secrets), taken from a pool the CSPRNG refills 4,096 bytes at a time (as
 * node's crypto.randomUUID does): one call per ~200 ids instead of one per id. A post draws
 * three (request id, two event ids), and the post's profile charged ~7 µs to each call (see
 * docs/performance.md). Each byte is used once.
 */
const POOL_BYTES = 4096;
const pool = Buffer.alloc(POOL_BYTES);
let poolAt = POOL_BYTES;

/** Like randomToken, for identifiers only (ids, request ids): never for a secret. */
export function randomIdToken(length: number): string {
  if (length > POOL_BYTES) return randomToken(length);
  if (poolAt + length > POOL_BYTES) {
    randomFillSync(pool);
    poolAt = 0;
  }
  let out = '';
  for (let i = 0; i < length; i++) out += ALPHABET[pool[poolAt + i] % 36];
  poolAt += length;
  return out;
}

export const ID_PREFIXES = {
  account: 'acct',
  user: 'usr',
  identity: 'idn',
  credential: 'key',
  session: 'ses',
  job: 'job',
  audit: 'aud',
  event: 'evt',
  channel: 'ch',
  approval: 'apr',
  webhook: 'whe',
  delivery: 'dlv',
  webhookBody: 'whb',
  notification: 'ntf',
  file: 'file',
  mirror: 'mir',
  mirrorDelivery: 'mdl',
} as const;

export type IdKind = keyof typeof ID_PREFIXES;

/** The exact form of an id of this kind: its prefix, `_`, and 20 base36 characters (newId's form). */
export function idPattern(kind: IdKind): RegExp {
  return new RegExp(`^${ID_PREFIXES[kind]}_[0-9a-z]{20}$`);
}

/** `acct_` + 20 random characters (~103 bits): unguessable, so ids never leak counts. */
export function newId(kind: IdKind): string {
  return `${ID_PREFIXES[kind]}_${randomIdToken(20)}`;
}
