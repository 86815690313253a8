/** The typed client of the REST API, generated from docs/openapi.json by `npm run docs:openapi` (packages/client/src/generated). */
export * from './api';
