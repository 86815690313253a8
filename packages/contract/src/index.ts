export * from './route';
export * from './errors';
export * from './routes';
export * as requestSchemas from './schemas/requests';
export * as views from './schemas/views';
export { buildDocument, DEFAULT_SERVERS, type ServerEntry, type DocumentOptions } from './openapi/document';
