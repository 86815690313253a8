import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod/v4';
import { AppError, randomToken, type Deps, type MessageSession } from '@teamchat/core';
import { TOOLS, toolNamed, toolsFor, type ToolDef } from './tools';
import { callRest } from './tools/rest-client';
import { appErrorResult, toToolResult } from './tools/results';

export const SERVER_INFO = { name: 'teamchat', version: '0.1.0' };

const INSTRUCTIONS = [
  'Tools of a team messaging service, each backed by one endpoint of its REST API and acting as your identity in one account.',
  'Ids: channels and DMs by `id`, messages by `ts`. Lists are paged: pass `next_cursor` back as `cursor`.',
  'Errors carry the API\'s `code` (e.g. insufficient_scope, not_a_member, rate_limited with retry_after).',
  'Deleting answers confirmation_required with an approval_url: give that link to a person; nothing is deleted until they approve.',
].join(' ');

/** What the HTTP layer attaches to each MCP request (as the SDK's AuthInfo.extra). */
export interface CallerInfo {
  credentialId: string;
  accountId: string;
  /** the credential's effective scopes at this request (its role applied) */
  scopes: ReadonlySet<string>;
}

export const callerOf = (authInfo: AuthInfo | undefined): CallerInfo & { token: string } => {
  const caller = authInfo?.extra?.caller as CallerInfo | undefined;
  if (!authInfo || !caller) throw new McpError(ErrorCode.InternalError, 'request reached the MCP server without authentication');
  return { ...caller, token: authInfo.token };
};

/** The JSON Schema of each tool's input, computed once. */
const listing = new Map<string, Tool>(TOOLS.map((t) => [t.name, describe(t)]));

function describe(t: ToolDef): Tool {
  const { $schema: _drop, ...inputSchema } = z.toJSONSchema(t.input, { io: 'input' }) as Record<string, unknown>;
  return {
    name: t.name,
    title: t.title,
    description: `${t.description} (REST: ${t.method} ${t.path}; scope ${t.scope})`,
    inputSchema: inputSchema as Tool['inputSchema'],
    annotations: { title: t.title, ...t.annotations },
  };
}

export const toolListing = (t: ToolDef): Tool => listing.get(t.name)!;

/**
 * One low-level MCP Server per session. The high-level McpServer can only enable or disable a
 * tool for everyone on the session; here tools/list follows the credential's scopes at each
 * request, and calling a tool outside them still goes to REST, which answers insufficient_scope.
 */
export function createSessionServer(deps: Deps, opts: { apiUrl: string; session: MessageSession }): Server {
  const server = new Server(SERVER_INFO, { capabilities: { tools: { listChanged: false } }, instructions: INSTRUCTIONS });

  server.setRequestHandler(ListToolsRequestSchema, async (_req, extra) => {
    const caller = callerOf(extra.authInfo);
    return { tools: toolsFor(caller.scopes).map(toolListing) };
  });

  server.setRequestHandler(CallToolRequestSchema, async (req, extra) => {
    const tool = toolNamed(req.params.name);
    if (!tool) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${req.params.name}. tools/list names the tools this credential may use.`);
    const caller = callerOf(extra.authInfo);
    const parsed = tool.input.safeParse(req.params.arguments ?? {});
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const field = issue.path.join('.') || 'arguments';
      return appErrorResult(new AppError('invalid_request', `${field}: ${issue.message}`, { field }));
    }
    const requestId = `mcp_${randomToken(20)}`;
    try {
      const res = await callRest({
        apiUrl: opts.apiUrl,
        token: caller.token,
        credentialId: caller.credentialId,
        accountId: caller.accountId,
        session: opts.session,
        secretsKey: deps.config.secretsKey,
        now: deps.now(),
        requestId,
      }, tool, parsed.data);
      return toToolResult(tool, res);
    } catch (err) {
      if (err instanceof AppError) return appErrorResult(err, { requestId, statusUrl: `${deps.config.publicWebUrl}/status` });
      throw err;
    }
  });
  return server;
}
