import { WebhookTransport, createRedis, webhookQueuesFor, type Deps } from '@teamchat/core';
import { startDeliveryWorker } from './delivery-worker';
import { startFanoutWorker } from './fanout-worker';
import { webhookMaintenance } from './maintenance';
import { startMirrorSender, type MirrorSenderOptions } from './mirror-sender';
import { startRelay, type RelayOptions } from './relay';

export * from './relay';
export * from './maintenance';
export * from './mirror-sender';

export interface WebhookWorkerOptions {
  relay?: RelayOptions;
  /** delivery attempts one process runs at once; default 64 */
  deliveryConcurrency?: number;
  /** webhook maintenance (sweep, purge) interval in ms; default 5000 */
  maintenanceIntervalMs?: number;
  /** only these accounts' events and deliveries (tests that share one database); default all */
  accountIds?: readonly string[];
  /** the channel mirrors' sender (docs/mirrors.md) */
  mirrors?: Omit<MirrorSenderOptions, 'accountIds'>;
}

export interface WebhookWorker {
  /** one maintenance pass now (tests) */
  maintain(): Promise<{ requeued: number; purged: number }>;
  /** finishes the attempts in flight, then stops */
  close(): Promise<void>;
}

/** Relay, fan-out, delivery and their maintenance, in this process. */
export function startWebhookWorker(deps: Deps, options: WebhookWorkerOptions = {}): WebhookWorker {
  const connection = createRedis(deps.config.redisUrl, 'worker');
  const queues = webhookQueuesFor(deps);
  const transport = new WebhookTransport(deps.config);
  const relay = startRelay(deps, queues, { accountIds: options.accountIds, ...options.relay });
  const fanout = startFanoutWorker(deps, connection, queues, transport);
  const delivery = startDeliveryWorker(deps, connection, queues, transport, options.deliveryConcurrency);
  const mirrors = startMirrorSender(deps, transport, { accountIds: options.accountIds, ...options.mirrors });
  const state = { lastPurge: 0 };
  let busy = false;
  const maintain = () => webhookMaintenance(deps, queues, state, options.accountIds);
  const timer = setInterval(() => {
    if (busy) return;
    busy = true;
    maintain()
      .then((r) => {
        if (r.requeued || r.purged) deps.logger.info('webhook maintenance', r);
      })
      .catch((err: Error) => deps.logger.warn('webhook maintenance failed', { error: err.message }))
      .finally(() => {
        busy = false;
      });
  }, options.maintenanceIntervalMs ?? 5000);
  timer.unref();
  return {
    maintain,
    async close() {
      clearInterval(timer);
      await relay.stop();
      // BullMQ's close waits for the jobs in progress: in-flight attempts finish and are recorded.
      await Promise.all([fanout.close(), delivery.close(), mirrors.stop()]);
      await transport.close();
      connection.disconnect();
    },
  };
}
