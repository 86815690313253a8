import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { AppError } from '@teamchat/core';
import type { ToolDef } from './define';
import type { RestResponse } from './rest-client';

/** Text blocks carry the JSON too (the MCP spec's advice for clients that ignore structured content), cut at this length. */
const MAX_JSON_TEXT = 64 * 1024;

const json = (value: unknown) => {
  const s = JSON.stringify(value);
  return s.length > MAX_JSON_TEXT ? `${s.slice(0, MAX_JSON_TEXT)}… (truncated; the full body is in structuredContent)` : s;
};

function summary(tool: ToolDef, res: RestResponse): string {
  const body = res.body;
  if (body && Array.isArray(body.data)) {
    return `${tool.title}: ${body.data.length} item(s)${body.next_cursor ? '; more with cursor=' + body.next_cursor : '; no more pages'}.`;
  }
  const ids = body && typeof body === 'object'
    ? ['id', 'delivery_id', 'ts', 'status'].filter((k) => typeof body[k] === 'string').map((k) => `${k} ${body[k]}`).join(', ')
    : '';
  const replayed = res.headers.get('idempotent-replayed') === 'true' ? ' (idempotent replay of the first result)' : '';
  return `${tool.title}: done (HTTP ${res.status})${ids ? `: ${ids}` : ''}${replayed}.`;
}

/** The REST error body, with Retry-After copied in as `retry_after` (seconds) when the API sent it. */
function errorBody(res: RestResponse): Record<string, unknown> {
  const error = { ...(res.body?.error ?? { code: 'internal', message: `The API host answered ${res.status}.` }) };
  const retryAfter = res.headers.get('retry-after');
  if (retryAfter && error.retry_after === undefined) error.retry_after = Number(retryAfter);
  return error;
}

/**
 * A REST answer as a tool result: the body as structured content plus a short text. Errors are
 * tool errors (`isError: true`) carrying the spec's error body. `confirmation_required` is not an
 * error for the agent: the request was recorded and waits for a person at `approval_url`.
 */
export function toToolResult(tool: ToolDef, res: RestResponse): CallToolResult {
  if (res.status >= 200 && res.status < 300) {
    const body = res.body && typeof res.body === 'object' && !Array.isArray(res.body) ? res.body : {};
    return { content: [{ type: 'text', text: summary(tool, res) }, { type: 'text', text: json(body) }], structuredContent: body };
  }
  const error = errorBody(res);
  const structured = { error, http_status: res.status };
  if (error.code === 'confirmation_required') {
    return {
      content: [
        { type: 'text', text: `confirmation_required: nothing is done yet. A person must open ${String(error.approval_url)} and approve it.` },
        { type: 'text', text: json(structured) },
      ],
      structuredContent: structured,
    };
  }
  return errorResult(structured);
}

function errorResult(structured: { error: Record<string, unknown>; http_status: number }): CallToolResult {
  const e = structured.error;
  const head = `${String(e.code)}${e.reason ? ` (${String(e.reason)})` : ''}: ${String(e.message)}`;
  const retry = e.retry_after !== undefined ? ` Retry after ${String(e.retry_after)} s.` : '';
  return { isError: true, content: [{ type: 'text', text: head + retry }, { type: 'text', text: json(structured) }], structuredContent: structured };
}

/**
 * An AppError raised before or instead of the REST call (bad arguments, API unreachable) as a
 * tool error. A 5xx carries `request_id` and `status_url` like the REST surface's (spec: Errors).
 */
export function appErrorResult(err: AppError, fault?: { requestId: string; statusUrl: string }): CallToolResult {
  const error: Record<string, unknown> = { code: err.code, message: err.message, ...err.extras };
  if (err.status >= 500 && fault) Object.assign(error, { request_id: fault.requestId, status_url: fault.statusUrl });
  return errorResult({ error, http_status: err.status });
}
