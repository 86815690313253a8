import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import { AppError, errors, randomToken, type Deps } from '@teamchat/core';
import { authenticate, type Authenticated } from './http/authenticate';
import { sendAppError, sendJson, sendRpcError } from './http/respond';
import { createSessionServer, type CallerInfo } from './session-server';
import { SessionRegistry, type LiveSession } from './sessions/registry';

/** Request bodies above this are refused (same as the API host). */
const BODY_LIMIT_BYTES = 1024 * 1024;
/** How often idle sessions are looked for (ms). */
const SWEEP_EVERY_MS = 60_000;
const SANE_REQUEST_ID = /^[A-Za-z0-9._:-]{8,128}$/;

export interface McpApp {
  /** the node:http request listener */
  handle(req: IncomingMessage, res: ServerResponse): void;
  sessions: SessionRegistry;
  close(): Promise<void>;
}

export interface McpAppOptions {
  /** where the API host is reached; default config.mcpApiUrl */
  apiUrl?: string;
}

const STATELESS_REFUSED =
  'Bad Request: this server keeps sessions. Send an initialize request first (POST /mcp without Mcp-Session-Id), ' +
  'then send the Mcp-Session-Id header it answers on every request. Stateless requests are refused.';

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > BODY_LIMIT_BYTES) throw errors.invalid('The request body is too large.', { field: 'body' });
    chunks.push(chunk as Buffer);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    throw errors.invalid('The request body is not valid JSON.', { field: 'body' });
  }
}

const isInitialize = (body: unknown): body is { method: 'initialize'; params?: { clientInfo?: { name?: unknown; version?: unknown } } } =>
  !!body && typeof body === 'object' && !Array.isArray(body) && (body as { method?: unknown }).method === 'initialize';

function authInfoOf(auth: Authenticated): AuthInfo {
  const caller: CallerInfo = { credentialId: auth.actor.principal.id, accountId: auth.actor.accountId, scopes: auth.actor.scopes };
  return { token: auth.token, clientId: auth.actor.principal.id, scopes: [...auth.actor.scopes], extra: { caller } };
}

/**
 * The MCP server over Streamable HTTP at POST/GET/DELETE /mcp. Every request is authenticated
 * first (the API host's policy); then either an initialize opens a session (counted against the
 * seat's cap) or the Mcp-Session-Id names one this process holds, opened by the same credential.
 */
export function createMcpApp(deps: Deps, options: McpAppOptions = {}): McpApp {
  const apiUrl = (options.apiUrl ?? deps.config.mcpApiUrl).replace(/\/$/, '');
  const sessions = new SessionRegistry(deps);
  const sweeper = setInterval(() => {
    sessions.sweep().catch((err: Error) => deps.logger.warn('mcp idle sweep failed', { error: err.message }));
  }, SWEEP_EVERY_MS);
  sweeper.unref();

  async function openSession(auth: Authenticated, body: Parameters<typeof isInitialize>[0], req: IncomingMessage, res: ServerResponse) {
    const info = isInitialize(body) ? body.params?.clientInfo : undefined;
    const session = { client: String(info?.name ?? 'unknown').slice(0, 128), version: String(info?.version ?? 'unknown').slice(0, 64) };
    const id = randomUUID();
    const server = createSessionServer(deps, { apiUrl, session });
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: () => id, enableJsonResponse: true });
    const now = deps.now();
    const live: LiveSession = {
      id, transport, server, session, openedAt: now, lastUsedAt: now,
      credentialId: auth.actor.principal.id, accountId: auth.actor.accountId, userId: auth.actor.userId, identityId: auth.actor.identityId,
    };
    transport.onclose = () => {
      void sessions.forget(live);
    };
    await server.connect(transport);
    try {
      await sessions.open(live, deps.config.planLimits[auth.account.plan as keyof typeof deps.config.planLimits].mcpSessionsPerSeat);
    } catch (err) {
      await sessions.end(live);
      throw err;
    }
    await transport.handleRequest(Object.assign(req, { auth: authInfoOf(auth) }), res, body);
    if (!transport.sessionId) await sessions.end(live);
  }

  async function route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = new URL(req.url ?? '/', 'http://mcp.invalid').pathname;
    if (req.method === 'GET' && (path === '/healthz' || path === '/status')) return sendJson(res, 200, { status: 'ok', host: 'mcp' });
    if (path !== '/mcp') throw new AppError('not_found', 'No such endpoint: the MCP endpoint is /mcp.');
    if (req.method !== 'POST' && req.method !== 'GET' && req.method !== 'DELETE') {
      return sendRpcError(res, 405, -32000, 'Method not allowed: use POST, GET or DELETE on /mcp.', { Allow: 'POST, GET, DELETE' });
    }
    const auth = await authenticate(req, deps);
    const sessionId = req.headers['mcp-session-id'];
    if (typeof sessionId !== 'string' || sessionId === '') {
      if (req.method !== 'POST') return sendRpcError(res, 400, -32000, STATELESS_REFUSED);
      const body = await readJson(req);
      if (!isInitialize(body)) return sendRpcError(res, 400, -32000, STATELESS_REFUSED);
      return openSession(auth, body, req, res);
    }
    const live = sessions.get(sessionId);
    if (!live) {
      const message = (await sessions.wasEvicted(sessionId))
        ? "Session evicted: this seat opened more concurrent MCP sessions than its plan allows, and this was its least recently used. Initialize a new session."
        : 'Session not found: it was closed, idled out, or opened on another MCP server process (route requests by Mcp-Session-Id). Initialize a new session.';
      return sendRpcError(res, 404, -32001, message);
    }
    if (live.credentialId !== auth.actor.principal.id) {
      throw new AppError('forbidden', 'This MCP session was opened with another credential.', { reason: 'session_credential' });
    }
    if (!(await sessions.touch(live))) {
      return sendRpcError(res, 404, -32001,
        "Session evicted: this seat opened more concurrent MCP sessions than its plan allows, and this was its least recently used. Initialize a new session.");
    }
    await live.transport.handleRequest(Object.assign(req, { auth: authInfoOf(auth) }), res);
  }

  function handle(req: IncomingMessage, res: ServerResponse): void {
    const incoming = req.headers['x-request-id'];
    const requestId = typeof incoming === 'string' && SANE_REQUEST_ID.test(incoming) ? incoming : `req_${randomToken(20)}`;
    res.setHeader('X-Request-Id', requestId);
    const log = deps.logger.child({ request_id: requestId, host: 'mcp' });
    const started = process.hrtime.bigint();
    res.on('finish', () => {
      log.info('request', { method: req.method, path: req.url?.split('?')[0], status: res.statusCode, ms: Number(process.hrtime.bigint() - started) / 1e6 });
    });
    route(req, res).catch((err: unknown) => sendAppError(res, err, { requestId, log, statusUrl: `${deps.config.publicWebUrl}/status` }));
  }

  return {
    handle,
    sessions,
    async close() {
      clearInterval(sweeper);
      await sessions.closeAll();
    },
  };
}
