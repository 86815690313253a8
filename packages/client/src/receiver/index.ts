export * from './verify';
export * from './errors';
export type * from './events';
