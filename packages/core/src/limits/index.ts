// Fair-use limits (spec: Limits): the seat key scheme, the per-call charge (minute + first unit
// in one Redis round trip), daily units (API and worker), a read's cost, the refusals, and how
// all of it degrades while Redis is away. The Express glue is apps/api/src/http/limits.ts.
export * from './keys';
export * from './units';
export * from './call-charge';
export * from './read-meter';
export * from './refusals';
export * from './availability';
export * from './local-window';
export * from './heavy-reads';
