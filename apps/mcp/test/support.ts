import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { Config, Deps } from '@teamchat/core';
import { createMcpApp, type McpApp } from '../src/app';
import { startHarness, type Harness } from '../../../test/support/harness';

/** The real API host and the real MCP server, each listening on an ephemeral port, on the real services. */
export interface McpHarness extends Harness {
  apiUrl: string;
  mcpUrl: URL;
  mcp: McpApp;
  /** an MCP client (the SDK's own) connected with `token` */
  connect(token: string, clientInfo?: { name: string; version: string }): Promise<Client>;
}

const listen = (handler: http.RequestListener) =>
  new Promise<http.Server>((resolve) => {
    const server = http.createServer(handler);
    server.listen(0, '127.0.0.1', () => resolve(server));
  });
const urlOf = (s: http.Server) => `http://127.0.0.1:${(s.address() as AddressInfo).port}`;

/** An MCP app listening on an ephemeral port, with MCP clients connected to it (closed with it). */
export interface ServedMcp {
  mcp: McpApp;
  mcpUrl: URL;
  /** an MCP client (the SDK's own) connected with `token` */
  connect(token: string, clientInfo?: { name: string; version: string }): Promise<Client>;
  close(): Promise<void>;
}

/** Serves an MCP app of `deps` (a second one on the same deps stands for a second MCP process). */
export async function serveMcp(deps: Deps, apiUrl: string): Promise<ServedMcp> {
  const mcp = createMcpApp(deps, { apiUrl });
  const mcpServer = await listen(mcp.handle);
  const mcpUrl = new URL(`${urlOf(mcpServer)}/mcp`);
  const clients: Client[] = [];
  return {
    mcp, mcpUrl,
    async connect(token, clientInfo = { name: 'test-client', version: '1.2.3' }) {
      const client = new Client(clientInfo);
      const transport = new StreamableHTTPClientTransport(mcpUrl, { requestInit: { headers: { Authorization: `Bearer ${token}` } } });
      await client.connect(transport);
      clients.push(client);
      return client;
    },
    async close() {
      await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
      await mcp.close();
      mcpServer.closeAllConnections();
      await new Promise((r) => mcpServer.close(r));
    },
  };
}

export async function startMcpHarness(overrides: Partial<Config> = {}): Promise<McpHarness> {
  const h = await startHarness(overrides);
  const apiServer = await listen(h.api);
  const apiUrl = urlOf(apiServer);
  const served = await serveMcp(h.deps, apiUrl);
  return {
    ...h,
    apiUrl, mcpUrl: served.mcpUrl, mcp: served.mcp, connect: served.connect,
    async close() {
      await served.close();
      apiServer.closeAllConnections();
      await new Promise((r) => apiServer.close(r));
      await h.close();
    },
  };
}

/** Calls a tool and returns its result with structuredContent typed loosely. */
export async function call(client: Client, name: string, args: Record<string, unknown> = {}) {
  return (await client.callTool({ name, arguments: args })) as CallToolResult & { structuredContent?: any };
}
