import type { NextFunction, Request, Response } from 'express';
import cookieParser from 'cookie-parser';
import { AppError, authenticateSecretHash, authenticateSession, csrfMatches, errors, hashSecret, tokenKind } from '@teamchat/core';
import { accountIdInPath } from './account';
import { depsOf, locals, type Host } from './locals';
import { authenticateFromMemory } from './remembered-auth';

export const SESSION_COOKIE = 'tc_session';
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

function bearer(req: Request): string | undefined {
  const header = req.get('authorization');
  if (!header) return undefined;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!m) throw errors.unauthorized('The Authorization header must be "Bearer <credential>".');
  return m[1];
}

const parseCookies = cookieParser();

/** The session cookie, if any; parses the cookies first where no middleware did (the API host). */
function sessionCookieOf(req: Request, res: Response): string | undefined {
  if (!req.cookies) parseCookies(req, res, () => undefined); // synchronous
  return req.cookies?.[SESSION_COOKIE] as string | undefined;
}

/** 401 unauthorized, reason wrong_host, naming the host to use (spec: Hosts rule 4); built in core. */
export const wrongHost = (useHost: Host, url: string): AppError => errors.wrongHost(useHost, url);

/**
 * The API host's policy: API keys and agent tokens only. A web session (cookie, or a session
 * token as bearer) is refused with wrong_host naming the web host.
 */
export async function authenticateApiHost(req: Request, res: Response, next: NextFunction): Promise<void> {
  const deps = depsOf(req);
  const token = bearer(req);
  if (!token) {
    if (sessionCookieOf(req, res)) throw wrongHost('web', deps.config.publicWebUrl);
    throw errors.unauthorized();
  }
  if (tokenKind(token) === 'web_session') throw wrongHost('web', deps.config.publicWebUrl);
  const secretHash = hashSecret(token);
  const accountId = accountIdInPath(req);
  // A message post or a page of messages may be authenticated from memory, confirmed by its own statement.
  if (authenticateFromMemory(req, res, secretHash, accountId)) return next();
  // One round trip: the credential, and the caller's seat in the account of the path (if any).
  const found = await authenticateSecretHash(deps.database.db, secretHash, deps.now(), accountId);
  if (!found) throw errors.credentialRefused();
  locals(res).principal = found.principal;
  locals(res).membership = found.membership;
  next();
}

/**
 * The web host's policy: a web session only, either as `Authorization: Bearer <session token>`
 * (spec: Authentication 1; no CSRF token, since nothing ambient authenticates such a request) or
 * as the browser's cookie, with X-CSRF-Token on every state-changing request. API keys and agent
 * tokens are refused with wrong_host naming the API host.
 */
export async function authenticateWebHost(req: Request, res: Response, next: NextFunction): Promise<void> {
  const deps = depsOf(req);
  const token = bearer(req);
  if (token) {
    const kind = tokenKind(token);
    if (kind === 'api_key' || kind === 'agent_token') throw wrongHost('api', deps.config.publicApiUrl);
    if (kind !== 'web_session') throw errors.unauthorized('The web host accepts only a signed-in session.');
  }
  const secret = token ?? sessionCookieOf(req, res);
  if (!secret) throw errors.unauthorized('Sign in first.');
  const session = await authenticateSession(deps.database.db, secret, deps.now(), accountIdInPath(req));
  if (!session) throw errors.unauthorized('The session has ended or expired; sign in again.');
  // Only a cookie is sent by the browser on its own, so only a cookie needs the CSRF check.
  if (!token && !SAFE_METHODS.has(req.method) && !csrfMatches(session, req.get('x-csrf-token'))) {
    throw new AppError('forbidden', 'A valid X-CSRF-Token header is required.', { reason: 'csrf' });
  }
  locals(res).principal = session.principal;
  locals(res).session = session;
  locals(res).membership = session.membership;
  next();
}

export function authenticateFor(host: Host) {
  return host === 'api' ? authenticateApiHost : authenticateWebHost;
}
