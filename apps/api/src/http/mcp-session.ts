import type { Request } from 'express';
import { MCP_SESSION_HEADER, verifyMcpSession, type Actor, type MessageSession } from '@teamchat/core';
import { depsOf } from './locals';

/**
 * The MCP session a call was made through, from the MCP server's signed `X-MCP-Session` header
 * (core `mcp/session-header.ts`). Accepted only from a credential, with a valid signature bound
 * to that credential; a forged, expired, another caller's or unsigned header is ignored (null).
 */
export function mcpSessionOf(req: Request, actor: Actor): MessageSession | null {
  if (actor.principal.via === 'web_session') return null;
  const deps = depsOf(req);
  return verifyMcpSession(deps.config.secretsKey, req.get(MCP_SESSION_HEADER), { credentialId: actor.principal.id, now: deps.now() });
}
