import http from 'node:http';
import { ConfigError, createDeps, loadConfig, waitReady } from '@teamchat/core';
import { createMcpApp } from './app';

/** Entrypoint: the MCP server (Streamable HTTP at /mcp) on MCP_PORT, calling the API host at MCP_API_URL. */
async function main(): Promise<void> {
  const config = loadConfig(process.env);
  const deps = createDeps(config, 'mcp');
  await waitReady(deps.redis);
  const app = createMcpApp(deps);
  const server = http.createServer(app.handle).listen(config.mcpPort, '0.0.0.0');
  deps.logger.info('listening', { mcp_port: config.mcpPort, api: config.mcpApiUrl });

  const shutdown = () => {
    deps.logger.info('shutting down');
    server.close();
    void app.close().then(() => deps.close()).finally(() => process.exit(0));
  };
  process.once('SIGTERM', shutdown);
  process.once('SIGINT', shutdown);
}

main().catch((err: Error) => {
  process.stderr.write(`mcp failed to start: ${err instanceof ConfigError ? err.message : err.stack}\n`);
  process.exit(1);
});
