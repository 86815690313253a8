export * from './route';
export * from './errors';
export * from './routes';
export * as requestSchemas from './schemas/requests';
export * as views from './schemas/views';
