export * from './call-self';
export * from './health';
export * from './server';
export * from './shutdown';
export * from './timeout';
export * from './warm-up';
export * from './warnings';
