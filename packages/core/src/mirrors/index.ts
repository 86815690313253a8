export * from './format';
export * from './pace';
export * from './rules';
export * from './load';
export * from './view';
export * from './health';
export * from './log';
export * from './manage';
