import { randomToken } from '../ids';

/** Recognisable prefixes: a leaked secret is easy to spot and to route to the right host. */
export const TOKEN_PREFIX = { api_key: 'tc_key_', agent_token: 'tc_agt_', web_session: 'tc_ses_' } as const;
export type TokenKind = keyof typeof TOKEN_PREFIX;

/** 40 base36 characters ≈ 206 bits of entropy. */
export function newSecret(kind: TokenKind): string {
  return TOKEN_PREFIX[kind] + randomToken(40);
}

export function tokenKind(secret: string): TokenKind | null {
  for (const [kind, prefix] of Object.entries(TOKEN_PREFIX)) if (secret.startsWith(prefix)) return kind as TokenKind;
  return null;
}

/** What lists show of a secret: its prefix and the first 4 random characters. */
export function displayPrefix(secret: string): string {
  return secret.slice(0, (tokenKind(secret) ? TOKEN_PREFIX[tokenKind(secret)!].length : 0) + 4);
}

/** `30d`, `12h`, `45m` → milliseconds; null if malformed. */
export function parseDuration(text: string): number | null {
  const m = /^(\d{1,5})([mhd])$/.exec(text);
  if (!m) return null;
  const unit = { m: 60_000, h: 3_600_000, d: 86_400_000 }[m[2] as 'm' | 'h' | 'd'];
  const ms = Number(m[1]) * unit;
  return ms > 0 ? ms : null;
}
