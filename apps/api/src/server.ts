import { ConfigError, createDeps, loadConfig, waitReady } from '@teamchat/core';
import { createApp } from './app';

/** Entrypoint: serves the API host on API_PORT and the web host on WEB_PORT from one process. */
async function main(): Promise<void> {
  const config = loadConfig(process.env);
  const deps = createDeps(config, 'api');
  await waitReady(deps.redis);
  const apiServer = createApp(deps, 'api').listen(config.apiPort, '0.0.0.0');
  const webServer = createApp(deps, 'web').listen(config.webPort, '0.0.0.0');
  deps.logger.info('listening', { api: config.publicApiUrl, web: config.publicWebUrl, api_port: config.apiPort, web_port: config.webPort });

  const shutdown = () => {
    deps.logger.info('shutting down');
    apiServer.close();
    webServer.close();
    void deps.close().finally(() => process.exit(0));
  };
  process.once('SIGTERM', shutdown);
  process.once('SIGINT', shutdown);
}

main().catch((err: Error) => {
  process.stderr.write(`api failed to start: ${err instanceof ConfigError ? err.message : err.stack}\n`);
  process.exit(1);
});
