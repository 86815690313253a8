import http from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  ConfigError, MCP_READINESS, createDeps, drainable, loadConfig, logProcessWarnings, onShutdownSignals, startOpsServer, waitReadyOrStartWithout,
} from '@teamchat/core';
import { createMcpApp } from './app';
import { mcpWarmUp } from './warm-up';

/**
 * Entrypoint: the MCP server (Streamable HTTP at /mcp) on MCP_PORT, calling the API host at
 * MCP_API_URL, and /healthz, /readyz and /metrics on MCP_OPS_PORT (never a public port). /readyz
 * answers 503 until the process is warm (mcpWarmUp, docs/operations.md "Readiness"), and 200
 * `degraded` while Redis is away (MCP_READINESS: the session cap is then kept in the process).
 */
async function main(): Promise<void> {
  const config = loadConfig(process.env);
  const deps = createDeps(config, 'mcp', { serving: true });
  logProcessWarnings(deps.logger);
  await waitReadyOrStartWithout(deps.redis, deps.logger);
  const app = createMcpApp(deps);
  const server = await new Promise<http.Server>((resolve, reject) => {
    const s = http.createServer(app.handle);
    s.once('error', reject);
    s.listen(config.mcpPort, '0.0.0.0', () => resolve(s));
  });
  const ops = await startOpsServer(deps, config.mcpOpsPort, MCP_READINESS);
  const http_ = drainable(server);
  // Signals are handled before the line that says the process listens, the warm-up included.
  onShutdownSignals({
    logger: deps.logger,
    timeoutMs: config.shutdownTimeoutMs,
    steps: [
      // Stop accepting; close the sessions (their open GET streams end, so the drain can finish);
      // requests in flight finish on their own.
      { name: 'http', run: async () => { const drained = http_.close(); await app.close(); await drained; } },
      { name: 'pools', run: () => deps.close() },
      { name: 'ops', run: () => ops.close() },
    ],
  });
  deps.logger.info('listening', { mcp_port: (server.address() as AddressInfo).port, ops_port: ops.port, api: config.mcpApiUrl });

  await deps.warmth.run(mcpWarmUp(deps, server), deps.logger);
}

main().catch((err: Error) => {
  process.stderr.write(`mcp failed to start: ${err instanceof ConfigError ? err.message : err.stack}\n`);
  process.exit(1);
});
