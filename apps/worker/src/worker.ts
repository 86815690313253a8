import { createRedis, type Deps } from '@teamchat/core';
import { startJobRunner } from './job-runner';
import { startMaintenance } from './maintenance';

export interface RunningWorker {
  close(): Promise<void>;
}

/** Starts every background loop of the worker process against the given deps. */
export function startWorker(deps: Deps, options: { maintenanceIntervalMs?: number } = {}): RunningWorker {
  const connection = createRedis(deps.config.redisUrl, 'worker');
  const runner = startJobRunner(deps, connection);
  const maintenance = startMaintenance(deps, options.maintenanceIntervalMs);
  return {
    async close() {
      maintenance.stop();
      await runner.close();
      connection.disconnect();
    },
  };
}
