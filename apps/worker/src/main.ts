import { ConfigError, createDeps, loadConfig } from '@teamchat/core';
import { startWorker } from './worker';

/** Entrypoint of the worker process (scaled separately from the API). */
async function main(): Promise<void> {
  const config = loadConfig(process.env);
  const deps = createDeps(config, 'worker');
  const worker = startWorker(deps);
  deps.logger.info('worker started');
  const shutdown = () => {
    deps.logger.info('worker shutting down');
    void worker.close().then(() => deps.close()).finally(() => process.exit(0));
  };
  process.once('SIGTERM', shutdown);
  process.once('SIGINT', shutdown);
}

main().catch((err: Error) => {
  process.stderr.write(`worker failed to start: ${err instanceof ConfigError ? err.message : err.stack}\n`);
  process.exit(1);
});
