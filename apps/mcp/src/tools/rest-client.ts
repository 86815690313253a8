import { AppError, MCP_SESSION_HEADER, signMcpSession, type MessageSession } from '@teamchat/core';
import type { RestRequest } from './define';

/** What came back from the API host. */
export interface RestResponse {
  status: number;
  headers: Headers;
  /** the parsed JSON body; null for an empty body (204) */
  body: any;
}

export interface CallContext {
  /** the API host's base URL, e.g. http://127.0.0.1:3000 */
  apiUrl: string;
  /** the caller's own bearer credential, as received on this MCP request */
  token: string;
  credentialId: string;
  accountId: string;
  session: MessageSession;
  secretsKey: string;
  now: Date;
  requestId: string;
  /** per REST call, in ms; default 30 s */
  timeoutMs?: number;
}

/**
 * Refuses a path with a segment that is empty, `.` or `..` (also percent-encoded, as `%2e`): the
 * URL parser would collapse it and the call would reach another route than the tool's (a job id of
 * `..` made `GET /jobs/..` into `GET /accounts/{id}`). Checked here, whatever the tool and whatever
 * its argument schemas, so a new tool cannot reopen it.
 */
export function assertPlainSegments(path: string): void {
  for (const raw of path.split('/').slice(1)) {
    let segment: string;
    try {
      segment = decodeURIComponent(raw);
    } catch {
      segment = raw;
    }
    if (segment === '' || segment === '.' || segment === '..') {
      throw new AppError('invalid_request', 'An argument would make an empty, "." or ".." path segment; give the id as it was returned.', { reason: 'invalid_path_segment' });
    }
  }
}

/**
 * The ONE REST call of a tool: over HTTP to the API host with the caller's credential, so scopes,
 * roles, limits, account states, idempotency and errors are the REST surface's own. The MCP
 * session travels in the signed X-MCP-Session header (core `mcp/session-header.ts`).
 */
export async function callRest(ctx: CallContext, request: RestRequest): Promise<RestResponse> {
  const path = `/accounts/${encodeURIComponent(ctx.accountId)}${request.path}`;
  assertPlainSegments(path);
  const url = new URL(`${ctx.apiUrl}${path}`);
  for (const [name, value] of Object.entries(request.query ?? {})) {
    if (value !== undefined) url.searchParams.set(name, String(value));
  }
  const headers: Record<string, string> = {
    Authorization: `Bearer ${ctx.token}`,
    Accept: 'application/json',
    'X-Request-Id': ctx.requestId,
    'User-Agent': `teamchat-mcp (${ctx.session.client}/${ctx.session.version})`.slice(0, 200),
    [MCP_SESSION_HEADER]: signMcpSession(ctx.secretsKey, { session: ctx.session, credentialId: ctx.credentialId, now: ctx.now }),
  };
  for (const [name, value] of Object.entries(request.headers ?? {})) if (value !== undefined) headers[name] = value;
  let body: string | undefined;
  if (request.body !== undefined) {
    headers['Content-Type'] = 'application/json';
    body = JSON.stringify(request.body);
  }
  let res: Response;
  try {
    res = await fetch(url, { method: request.method, headers, body, redirect: 'manual', signal: AbortSignal.timeout(ctx.timeoutMs ?? 30_000) });
  } catch (err) {
    throw new AppError('internal', `The API host did not answer (${(err as Error).name}); try again.`);
  }
  const text = await res.text();
  let parsed: unknown = null;
  if (text) {
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new AppError('internal', `The API host answered ${res.status} with a body that is not JSON.`);
    }
  }
  return { status: res.status, headers: res.headers, body: parsed };
}
