export * from './worker';
export * from './job-runner';
export * from './maintenance';
