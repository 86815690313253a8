import { API_READINESS, ConfigError, createDeps, drainable, loadConfig, logProcessWarnings, onShutdownSignals, startOpsServer, waitReadyOrStartWithout } from '@teamchat/core';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createApp } from './app';
import { createHostServer } from './http/well-formed';
import { apiWarmUp } from './warm-up';

/**
 * Entrypoint: serves the API host on API_PORT and the web host on WEB_PORT from one process,
 * and /healthz, /readyz and /metrics on OPS_PORT (never a public port). /readyz answers 503
 * until the process is warm (apiWarmUp, docs/operations.md "Readiness").
 */
async function main(): Promise<void> {
  const config = loadConfig(process.env);
  const deps = createDeps(config, 'api', { serving: true });
  logProcessWarnings(deps.logger);
  await waitReadyOrStartWithout(deps.redis, deps.logger);
  const listen = (app: ReturnType<typeof createApp>, port: number) =>
    new Promise<Server>((resolve, reject) => {
      const server = createHostServer(app, deps.logger);
      server.once('error', reject);
      server.listen(port, '0.0.0.0', () => {
        server.off('error', reject);
        resolve(server);
      });
    });
  const apiServer = await listen(createApp(deps, 'api'), config.apiPort);
  const webServer = await listen(createApp(deps, 'web'), config.webPort);
  const ops = await startOpsServer(deps, config.opsPort, API_READINESS);
  const api = drainable(apiServer);
  const web = drainable(webServer);
  // Signals are handled before the line that says the process listens, the warm-up included.
  onShutdownSignals({
    logger: deps.logger,
    timeoutMs: config.shutdownTimeoutMs,
    steps: [
      // Stop accepting and let requests in flight finish (each commits or rolls back on its own).
      { name: 'http', run: () => Promise.all([api.close(), web.close()]) },
      { name: 'pools', run: () => deps.close() },
      { name: 'ops', run: () => ops.close() },
    ],
  });
  deps.logger.info('listening', {
    api: config.publicApiUrl, web: config.publicWebUrl,
    api_port: (apiServer.address() as AddressInfo).port, web_port: (webServer.address() as AddressInfo).port, ops_port: ops.port,
  });

  await deps.warmth.run(apiWarmUp(deps, { api: apiServer, web: webServer }), deps.logger);
}

main().catch((err: Error) => {
  process.stderr.write(`api failed to start: ${err instanceof ConfigError ? err.message : err.stack}\n`);
  process.exit(1);
});
