import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { ConfigError, createDeps, drainable, loadConfig, logProcessWarnings, onShutdownSignals, waitReadyOrStartWithout } from '@teamchat/core';
import { createMcpApp } from './app';

/** Entrypoint: the MCP server (Streamable HTTP at /mcp) on MCP_PORT, calling the API host at MCP_API_URL. */
async function main(): Promise<void> {
  const config = loadConfig(process.env);
  const deps = createDeps(config, 'mcp');
  logProcessWarnings(deps.logger);
  await waitReadyOrStartWithout(deps.redis, deps.logger);
  const app = createMcpApp(deps);
  const server = await new Promise<http.Server>((resolve, reject) => {
    const s = http.createServer(app.handle);
    s.once('error', reject);
    s.listen(config.mcpPort, '0.0.0.0', () => resolve(s));
  });
  const http_ = drainable(server);
  deps.logger.info('listening', { mcp_port: (server.address() as AddressInfo).port, api: config.mcpApiUrl });

  onShutdownSignals({
    logger: deps.logger,
    timeoutMs: config.shutdownTimeoutMs,
    steps: [
      // Stop accepting; close the sessions (their open GET streams end, so the drain can finish);
      // requests in flight finish on their own.
      { name: 'http', run: async () => { const drained = http_.close(); await app.close(); await drained; } },
      { name: 'pools', run: () => deps.close() },
    ],
  });
}

main().catch((err: Error) => {
  process.stderr.write(`mcp failed to start: ${err instanceof ConfigError ? err.message : err.stack}\n`);
  process.exit(1);
});
