export * from './client';
export * from './migrate';
export * from './online';
export * from './pool';
export * from './statements';
export * as schema from './schema';
export * from './schema';
export { sql, eq, and, or, lt, gt, lte, gte, desc, asc, inArray, isNull, isNotNull, ne, getTableColumns } from 'drizzle-orm';
export type { AnyColumn, SQL } from 'drizzle-orm';
