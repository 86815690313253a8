export * from './delivery-log-query';
export * from './replay-failed';
export * from './stats';
