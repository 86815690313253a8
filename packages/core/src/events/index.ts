// Events: the one owner of event rows (types, `data` builders, the outbox writer), the delivery
// bodies rendered from them, and the rule of which endpoints an event reaches.
export * from './types';
export * from './data';
export * from './record';
export * from './wake';
export * from './render';
export * from './routing';
