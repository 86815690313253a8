import { createRedis, type Deps } from '@teamchat/core';
import { startJobRunner } from './job-runner';
import { startMaintenance } from './maintenance';
import { startWebhookWorker, type WebhookWorkerOptions } from './webhooks';

export interface RunningWorker {
  /** the webhook relay, fan-out and delivery loops */
  webhooks: ReturnType<typeof startWebhookWorker>;
  close(): Promise<void>;
}

/** Starts every background loop of the worker process against the given deps. */
export function startWorker(deps: Deps, options: { maintenanceIntervalMs?: number; webhooks?: WebhookWorkerOptions } = {}): RunningWorker {
  const connection = createRedis(deps.config.redisUrl, 'worker');
  const runner = startJobRunner(deps, connection);
  const maintenance = startMaintenance(deps, options.maintenanceIntervalMs);
  const webhooks = startWebhookWorker(deps, options.webhooks);
  return {
    webhooks,
    async close() {
      maintenance.stop();
      await Promise.all([runner.close(), webhooks.close()]);
      connection.disconnect();
    },
  };
}
