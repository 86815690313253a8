import { randomBytes } from 'node:crypto';

const ALPHABET = '0123456789abcdefghijklmnopqrstuvwxyz';

/** Random base36 string of `length` characters (about 5.17 bits each). */
export function randomToken(length: number): string {
  const bytes = randomBytes(length);
  let out = '';
  for (let i = 0; i < length; i++) out += ALPHABET[bytes[i] % 36];
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
} as const;

export type IdKind = keyof typeof ID_PREFIXES;

/** `acct_` + 20 random characters (~103 bits): unguessable, so ids never leak counts. */
export function newId(kind: IdKind): string {
  return `${ID_PREFIXES[kind]}_${randomToken(20)}`;
}
