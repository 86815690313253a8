export * from './metrics';
export { COLLECT_TIMEOUT_MS, OUTBOX_COUNT_CAP, QUEUE_STATES } from './collectors';
