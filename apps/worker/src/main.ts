import { ConfigError, WORKER_READINESS, createDeps, isShuttingDown, loadConfig, logProcessWarnings, onShutdownSignals, startOpsServer } from '@teamchat/core';
import { engineWarmUp } from '@teamchat/delivery';
import { opsPortFlag } from './args';
import { startWorker } from './worker';

/** Entrypoint of the worker process (scaled separately from the API). `--ops-port N` overrides WORKER_OPS_PORT. */
async function main(): Promise<void> {
  const flag = opsPortFlag(process.argv.slice(2));
  const config = loadConfig(flag === undefined ? process.env : { ...process.env, WORKER_OPS_PORT: flag });
  const deps = createDeps(config, 'worker', { statementTimeoutMs: config.workerDbStatementTimeoutMs, serving: true });
  logProcessWarnings(deps.logger);
  // The operations port answers at once (/readyz 503 while warming); the engine starts warm
  // (docs/operations.md "Readiness").
  const ops = await startOpsServer(deps, config.workerOpsPort, WORKER_READINESS);
  /** The engine, once started (after the warm-up, unless a signal came first). */
  const engine: { worker?: ReturnType<typeof startWorker> } = {};
  // Signals are handled from here on, the warm-up included: a signal during the warm-up cuts it
  // short (nothing in it needs finishing: docs/operations.md "Graceful shutdown") and the engine
  // never starts.
  onShutdownSignals({
    logger: deps.logger,
    timeoutMs: config.shutdownTimeoutMs,
    steps: [
      // BullMQ's close waits for active jobs; a job still running at the timeout is stalled and taken by another worker.
      { name: 'workers', run: () => engine.worker?.close() },
      { name: 'pools', run: () => deps.close() },
      { name: 'ops', run: () => ops.close() },
    ],
  });
  deps.logger.info('warming up', { ops_port: ops.port });
  await deps.warmth.run(engineWarmUp(deps), deps.logger);
  if (isShuttingDown()) return;
  engine.worker = startWorker(deps);
  deps.logger.info('worker started', { ops_port: ops.port, role: config.workerRole });
}

main().catch((err: Error) => {
  process.stderr.write(`worker failed to start: ${err instanceof ConfigError ? err.message : err.stack}\n`);
  process.exit(1);
});
