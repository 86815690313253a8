import { consumerConnection, runsPart, type Deps } from '@teamchat/core';
import { startJobRunner } from './job-runner';
import { startMaintenance } from './maintenance';
import { startDeliveryEngine, type DeliveryEngineOptions } from '@teamchat/delivery';

export interface RunningWorker {
  /** the webhook delivery engine (packages/delivery) */
  webhooks: ReturnType<typeof startDeliveryEngine>;
  close(): Promise<void>;
}

/**
 * Starts the background loops of the worker process's role (WORKER_ROLE, docs/operations.md
 * "Worker roles") against the given deps: a `new` worker runs only the engine's relay and
 * fan-out; the jobs and their maintenance run with everything that falls due (`due`, `all`).
 */
export function startWorker(deps: Deps, options: { maintenanceIntervalMs?: number; webhooks?: DeliveryEngineOptions } = {}): RunningWorker {
  const role = options.webhooks?.role ?? deps.config.workerRole;
  // The job runner's consumer connection (watched: consumerConnection).
  const consumers = consumerConnection(deps.config, deps.logger);
  const runsDue = runsPart(role, 'due');
  const runner = runsDue ? startJobRunner(deps, consumers.redis) : null;
  const maintenance = runsDue ? startMaintenance(deps, options.maintenanceIntervalMs) : null;
  const webhooks = startDeliveryEngine(deps, { ...options.webhooks, role });
  return {
    webhooks,
    async close() {
      maintenance?.stop();
      await Promise.all([runner?.close(), webhooks.close()]);
      consumers.close();
    },
  };
}
