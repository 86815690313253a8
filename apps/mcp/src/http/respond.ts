import type { ServerResponse } from 'node:http';
import { AppError, type Logger } from '@teamchat/core';

/**
 * The MCP server's HTTP answers outside MCP messages. Authentication and account errors use the
 * REST surface's error body (`{"error": {code, message, ...}}`, built in core); transport
 * errors (no session, evicted session) use a JSON-RPC error, which MCP clients read.
 */
export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  res.writeHead(status, { 'Content-Type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

export function sendAppError(res: ServerResponse, err: unknown, ctx: { requestId: string; log: Logger; statusUrl: string }): void {
  let e: AppError;
  if (err instanceof AppError) e = err;
  else {
    ctx.log.error('unhandled error', { error: err instanceof Error ? { name: err.name, message: err.message, stack: err.stack } : String(err) });
    e = new AppError('internal', 'Something went wrong on our side. Quote the request id if you contact us.');
  }
  const body: Record<string, unknown> = { code: e.code, message: e.message, ...e.extras };
  if (e.status >= 500) Object.assign(body, { request_id: ctx.requestId, status_url: ctx.statusUrl });
  const headers: Record<string, string> = { ...e.headers };
  if (e.status === 401) headers['WWW-Authenticate'] = 'Bearer realm="teamchat"';
  sendJson(res, e.status, { error: body }, headers);
}

/** JSON-RPC codes the SDK uses for transport errors: -32000 bad request, -32001 session not found. */
export function sendRpcError(res: ServerResponse, status: number, code: -32000 | -32001 | -32700, message: string, headers: Record<string, string> = {}): void {
  sendJson(res, status, { jsonrpc: '2.0', error: { code, message }, id: null }, headers);
}
