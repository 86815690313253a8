// Fair-use limits: daily call units per seat (per-minute limits live in the API's middleware),
// and how they degrade while Redis is away.
export * from './units';
export * from './availability';
export * from './local-window';
