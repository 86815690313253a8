import { ConfigError, createDeps, loadConfig, onShutdownSignals, startOpsServer } from '@teamchat/core';
import { engineWarmUp } from '@teamchat/delivery';
import { opsPortFlag } from './args';
import { startWorker } from './worker';

/** Entrypoint of the worker process (scaled separately from the API). `--ops-port N` overrides WORKER_OPS_PORT. */
async function main(): Promise<void> {
  const flag = opsPortFlag(process.argv.slice(2));
  const config = loadConfig(flag === undefined ? process.env : { ...process.env, WORKER_OPS_PORT: flag });
  const deps = createDeps(config, 'worker', { statementTimeoutMs: config.workerDbStatementTimeoutMs, serving: true });
  // The operations port answers at once (/readyz 503 while warming); the engine starts warm
  // (docs/operations.md "Readiness").
  const ops = await startOpsServer(deps, config.workerOpsPort);
  await deps.warmth.run(engineWarmUp(deps), deps.logger);
  const worker = startWorker(deps);
  deps.logger.info('worker started', { ops_port: ops.port });
  onShutdownSignals({
    logger: deps.logger,
    timeoutMs: config.shutdownTimeoutMs,
    steps: [
      // BullMQ's close waits for active jobs; a job still running at the timeout is stalled and taken by another worker.
      { name: 'workers', run: () => worker.close() },
      { name: 'pools', run: () => deps.close() },
      { name: 'ops', run: () => ops.close() },
    ],
  });
}

main().catch((err: Error) => {
  process.stderr.write(`worker failed to start: ${err instanceof ConfigError ? err.message : err.stack}\n`);
  process.exit(1);
});
