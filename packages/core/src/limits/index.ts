// Fair-use limits: daily call units per seat (per-minute limits live in the API's middleware).
export * from './units';
