/**
 * The delivery engine (docs/webhooks.md "The delivery engine"): relay, fan-out, dispatcher,
 * attempt pipeline, in-flight slots, transport, sweep. The worker runs it (startDeliveryEngine);
 * the API sends test events and replays through the pipeline (deliverTestEvent, replayDelivery,
 * deliverEnableTest). The rules it applies are core's.
 */
export * from './engine';
export * from './relay';
export * from './maintenance';
export * from './fan-out';
export * from './dispatcher';
export * from './pipeline';
export * from './claims-ahead';
export * from './in-flight';
export * from './transport';
export * from './send';
export * from './store';
export * from './units';
export * from './queues';
export * from './sweep';
export * from './lane-ages';
export * from './manual';
export * from './test-event';
export * from './replay';
export * from './enable-test';
export * from './replay-failed-job';
export * from './mirror-send';
export * from './mirror-sender';
export * from './mirror-test';
export * from './warm-up';
