import { startDeliveryWorker } from './delivery-worker';
import { fanOutAndHandOver, startFanoutWorker } from './fanout-worker';
import { maintenanceScheduleFrom, webhookMaintenance } from './maintenance';
import { startMirrorSender, type MirrorSenderOptions } from './mirror-sender';
import { startRelay, type RelayOptions } from './relay';
import { consumerConnection, runsPart, type Deps, type WorkerRole } from '@teamchat/core';
import { Dispatcher } from './dispatcher';
import { startLaneAgesPublisher } from './lane-ages';
import type { AttemptOutcome } from './pipeline';
import { webhookQueuesFor } from './queues';
import { WebhookTransport } from './transport';


export interface DeliveryEngineOptions {
  relay?: RelayOptions;
  /** delivery wake-up jobs one process takes at once; default 64 */
  deliveryConcurrency?: number;
  /** webhook maintenance (sweep, purge) interval in ms; default 5000 */
  maintenanceIntervalMs?: number;
  /** only these accounts' events and deliveries (tests that share one database); default all */
  accountIds?: readonly string[];
  /** the channel mirrors' sender (docs/mirrors.md) */
  mirrors?: Omit<MirrorSenderOptions, 'accountIds'>;
  /** which parts run here (docs/operations.md "Worker roles"); default `all` */
  role?: WorkerRole;
}

export interface DeliveryEngine {
  /** the process's dispatcher (tests) */
  dispatcher: Dispatcher;
  /** one maintenance pass now (tests) */
  maintain(): Promise<{ woken: number; purged: number }>;
  /** finishes the attempts in flight, then stops */
  close(): Promise<void>;
}

/** Relay, fan-out, delivery and their maintenance, in this process. */
export function startDeliveryEngine(deps: Deps, options: DeliveryEngineOptions = {}): DeliveryEngine {
  // The fan-out and delivery consumers' connection (watched: consumerConnection).
  const consumers = consumerConnection(deps.config, deps.logger);
  const queues = webhookQueuesFor(deps);
  const transport = new WebhookTransport(deps.config);
  // Retries and rows that must wait get a wake-up (queues.ts); a failure to enqueue one is the sweep's to repair.
  const onOutcome = (outcome: AttemptOutcome) => {
    const wake = outcome.kind === 'done' && outcome.next ? queues.scheduleRetries([outcome.next])
      : outcome.kind === 'wait' ? queues.enqueueWakeUp(outcome.deliveryId, outcome.until) : null;
    wake?.catch((err: Error) => deps.logger.warn('scheduling a delivery\'s wake-up failed; the sweep will', { delivery_id: outcome.deliveryId, error: err.message }));
  };
  const dispatcher = new Dispatcher(deps, transport, onOutcome);
  deps.metrics.watchDispatcher(() => dispatcher.stats());
  // A role runs its parts only (docs/operations.md "Worker roles"): `new` the relay and the
  // fan-out (new events' first attempts, handed to this dispatcher), `due` the wake-ups, the
  // maintenance pass (the sweep among it) and the mirrors. A deployment needs both somewhere.
  const role = options.role ?? 'all';
  const runsNew = runsPart(role, 'new');
  const runsDue = runsPart(role, 'due');
  const relay = runsNew ? startRelay(deps, queues, { accountIds: options.accountIds, fanOutHere: (ids, read) => fanOutAndHandOver(deps, dispatcher, ids, read), ...options.relay }) : null;
  const fanout = runsNew ? startFanoutWorker(deps, consumers.redis, dispatcher) : null;
  const delivery = runsDue ? startDeliveryWorker(deps, consumers.redis, dispatcher, options.deliveryConcurrency) : null;
  // Channel mirrors: a second kind of target, sent through this engine's dispatcher (lanes,
  // in-flight slots) on its transport (docs/mirrors.md "Sending").
  const mirrors = runsDue ? startMirrorSender(deps, dispatcher, transport, { accountIds: options.accountIds, ...options.mirrors }) : null;
  const lanes = startLaneAgesPublisher(deps, dispatcher);
  const state = maintenanceScheduleFrom(Date.now());
  let busy = false;
  const maintain = () => webhookMaintenance(deps, queues, state, options.accountIds);
  const timer = !runsDue ? undefined : setInterval(() => {
    if (busy) return;
    busy = true;
    maintain()
      .then((r) => {
        if (r.woken || r.purged) deps.logger.info('webhook maintenance', r);
      })
      .catch((err: Error) => deps.logger.warn('webhook maintenance failed', { error: err.message }))
      .finally(() => {
        busy = false;
      });
  }, options.maintenanceIntervalMs ?? 5000);
  timer?.unref();
  return {
    dispatcher,
    maintain,
    async close() {
      clearInterval(timer);
      await relay?.stop();
      // BullMQ's close waits for the jobs in progress (short: they hand rows over); then the
      // attempts on the wire finish and are recorded. Rows still waiting stay open for the sweep.
      await Promise.all([fanout?.close(), delivery?.close(), mirrors?.stop()]);
      await dispatcher.close();
      await lanes.stop();
      await transport.close();
      consumers.close();
    },
  };
}
