import { deriveKey, hmacHex, safeEqual } from '../crypto';
import type { MessageSession } from '../events/types';

/**
 * The MCP session's identity as it travels from the MCP server to the API host: the header
 * `X-MCP-Session: v1.<base64url(json)>.<hex hmac>`, signed with a key derived from SECRETS_KEY
 * (so only a process holding that key can make one) and bound to the credential that made the
 * call and to a time, so a header seen once cannot be replayed by another caller or later.
 */
export const MCP_SESSION_HEADER = 'X-MCP-Session';
/** how long a signed header stays valid, in seconds */
export const MCP_SESSION_HEADER_TTL_S = 300;
const MAX = { client: 128, version: 64 };

interface SignedClaims {
  client: string;
  version: string;
  /** the credential id the header is bound to */
  cid: string;
  /** issued at, unix seconds */
  iat: number;
}

const keyOf = (secretsKey: string) => deriveKey(secretsKey, 'mcp-session');

export function signMcpSession(secretsKey: string, input: { session: MessageSession; credentialId: string; now: Date }): string {
  const claims: SignedClaims = {
    client: input.session.client.slice(0, MAX.client),
    version: input.session.version.slice(0, MAX.version),
    cid: input.credentialId,
    iat: Math.floor(input.now.getTime() / 1000),
  };
  const body = Buffer.from(JSON.stringify(claims)).toString('base64url');
  return `v1.${body}.${hmacHex(keyOf(secretsKey), `v1.${body}`)}`;
}

/** The session the header carries, or null when it is absent, malformed, forged, expired or another credential's. */
export function verifyMcpSession(
  secretsKey: string,
  header: string | undefined,
  expect: { credentialId: string; now: Date },
): MessageSession | null {
  if (!header || header.length > 2048) return null;
  const [v, body, mac] = header.split('.');
  if (v !== 'v1' || !body || !mac) return null;
  if (!safeEqual(mac, hmacHex(keyOf(secretsKey), `v1.${body}`))) return null;
  let claims: Partial<SignedClaims>;
  try {
    claims = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
  } catch {
    return null;
  }
  if (claims.cid !== expect.credentialId || typeof claims.iat !== 'number') return null;
  if (Math.abs(expect.now.getTime() / 1000 - claims.iat) > MCP_SESSION_HEADER_TTL_S) return null;
  if (typeof claims.client !== 'string' || typeof claims.version !== 'string') return null;
  return { client: claims.client.slice(0, MAX.client), version: claims.version.slice(0, MAX.version) };
}
