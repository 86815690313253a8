import type { IncomingMessage } from 'node:http';
import { authenticateCredential, errors, resolveActor, tokenKind, type AccountRow, type Actor, type Deps } from '@teamchat/core';

const SESSION_COOKIE = 'tc_session';

export interface Authenticated {
  token: string;
  actor: Actor;
  account: AccountRow;
}

/**
 * The API host's policy, applied to every MCP request before any MCP message is read: an API key
 * or agent token as `Authorization: Bearer`; a web session (cookie or session token) is refused
 * with wrong_host naming the web host; missing, unknown, expired or revoked → 401. Checked on
 * every request, so a revocation ends an open session's access at once.
 */
export async function authenticate(req: IncomingMessage, deps: Deps): Promise<Authenticated> {
  const header = req.headers.authorization;
  if (!header) {
    if (new RegExp(`(^|;\\s*)${SESSION_COOKIE}=`).test(req.headers.cookie ?? '')) throw errors.wrongHost('web', deps.config.publicWebUrl);
    throw errors.unauthorized('Send an API key or agent token as "Authorization: Bearer <credential>".');
  }
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!m) throw errors.unauthorized('The Authorization header must be "Bearer <credential>".');
  const token = m[1];
  if (tokenKind(token) === 'web_session') throw errors.wrongHost('web', deps.config.publicWebUrl);
  const principal = await authenticateCredential(deps.database.db, token, deps.now());
  if (!principal || !principal.accountId) throw errors.credentialRefused();
  // The credential's role-adjusted scopes (what tools/list shows) and the seat's plan (the session cap).
  const { actor, account } = await resolveActor(deps.database.db, principal, principal.accountId);
  return { token, actor, account };
}
