import { createRedisFor, type Deps } from '@teamchat/core';
import { startJobRunner } from './job-runner';
import { startMaintenance } from './maintenance';
import { startDeliveryEngine, type DeliveryEngineOptions } from '@teamchat/delivery';

export interface RunningWorker {
  /** the webhook delivery engine (packages/delivery) */
  webhooks: ReturnType<typeof startDeliveryEngine>;
  close(): Promise<void>;
}

/** Starts every background loop of the worker process against the given deps. */
export function startWorker(deps: Deps, options: { maintenanceIntervalMs?: number; webhooks?: DeliveryEngineOptions } = {}): RunningWorker {
  const connection = createRedisFor(deps.config, 'worker');
  const runner = startJobRunner(deps, connection);
  const maintenance = startMaintenance(deps, options.maintenanceIntervalMs);
  const webhooks = startDeliveryEngine(deps, options.webhooks);
  return {
    webhooks,
    async close() {
      maintenance.stop();
      await Promise.all([runner.close(), webhooks.close()]);
      connection.disconnect();
    },
  };
}
