export * from './rows';
export * from './schedule';
export * from './health';
export * from './notify';
export * from './manual-limits';
export * from './log';
