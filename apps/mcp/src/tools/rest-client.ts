import { AppError, MCP_SESSION_HEADER, signMcpSession, type MessageSession } from '@teamchat/core';
import { PathParameterError, createApiClient } from '@teamchat/client';
import type { ToolDef } from './define';

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

class NotJson extends Error {
  constructor(readonly status: number) {
    super(`The API host answered ${status} with a body that is not JSON.`);
  }
}

/**
 * The ONE REST call of a tool: over HTTP to the API host with the caller's credential, through the
 * typed client, so scopes, roles, limits, account states, idempotency and errors are the REST
 * surface's own. The MCP session travels in the signed X-MCP-Session header (core
 * `mcp/session-header.ts`). The call must be the tool's declared route (its path and method).
 */
export async function callRest(ctx: CallContext, tool: ToolDef, args: unknown): Promise<RestResponse> {
  const headers: Record<string, string> = {
    Authorization: `Bearer ${ctx.token}`,
    Accept: 'application/json',
    'X-Request-Id': ctx.requestId,
    'User-Agent': `teamchat-mcp (${ctx.session.client}/${ctx.session.version})`.slice(0, 200),
    [MCP_SESSION_HEADER]: signMcpSession(ctx.secretsKey, { session: ctx.session, credentialId: ctx.credentialId, now: ctx.now }),
  };
  let answered = false;
  const api = createApiClient({
    baseUrl: ctx.apiUrl,
    headers,
    fetch: async (request) => {
      const res = await fetch(request, { redirect: 'manual', signal: AbortSignal.timeout(ctx.timeoutMs ?? 30_000) });
      answered = true;
      return res;
    },
  });
  api.use({
    onRequest: ({ schemaPath, request }) => {
      if (schemaPath !== tool.path || request.method !== tool.method) {
        throw new Error(`tool ${tool.name} called ${request.method} ${schemaPath}, not its route ${tool.method} ${tool.path}`);
      }
    },
    onResponse: async ({ response }) => {
      // A body that is not JSON is the API host's fault, never the tool's to parse.
      const type = response.headers.get('content-type') ?? '';
      if (response.status !== 204 && response.headers.get('content-length') !== '0' && !/^application\/json/.test(type)) throw new NotJson(response.status);
      return undefined;
    },
  });
  let answer;
  try {
    answer = await tool.call(api, ctx.accountId, args);
  } catch (err) {
    // Nothing was sent: the URL parser would have collapsed the segment and the call would have
    // reached another route than the tool's (a job id of `..` made `GET /jobs/..` into `GET /accounts/{id}`).
    if (err instanceof PathParameterError) {
      throw new AppError('invalid_request', 'An argument would make an empty, "." or ".." path segment; give the id as it was returned.', { reason: 'invalid_path_segment' });
    }
    if (err instanceof NotJson) throw new AppError('internal', err.message);
    if (answered && err instanceof SyntaxError) throw new AppError('internal', 'The API host answered with a body that is not JSON.');
    if (!answered) throw new AppError('internal', `The API host did not answer (${(err as Error).name}); try again.`);
    throw err;
  }
  const { response } = answer;
  const body = response.ok ? answer.data : answer.error;
  return { status: response.status, headers: response.headers, body: body === undefined || body === '' ? null : body };
}
