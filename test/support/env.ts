/**
 * The test run's database and Redis. globalSetup creates a fresh database per run (so several
 * runs on one machine never collide) and publishes its URL in TEST_DATABASE_URL. When nothing
 * answers at the configured servers it starts an embedded PostgreSQL or a local redis-server
 * (scripts/dev-services.ts) and publishes their URLs in TEST_SERVER_URL and REDIS_URL before
 * the test workers start, so these constants name them in every test file.
 */
export const DEFAULT_TEST_SERVER_URL = 'postgres://postgres@127.0.0.1:5432/postgres';
export const TEST_SERVER_URL = process.env.TEST_SERVER_URL ?? DEFAULT_TEST_SERVER_URL;

/** The server URL as of now (global setup may have started one after this module loaded). */
export function testServerUrl(): string {
  return process.env.TEST_SERVER_URL ?? DEFAULT_TEST_SERVER_URL;
}

export function testDatabaseUrl(): string {
  const url = process.env.TEST_DATABASE_URL;
  if (!url) throw new Error('TEST_DATABASE_URL is not set: run the tests through jest (globalSetup sets it).');
  return url;
}

export const TEST_REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
