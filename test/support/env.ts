/** The test run's database and Redis prefix, shared by globalSetup and every test file. */
const base = process.env.TEST_DATABASE_URL ?? process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/teamchat_test';

export const TEST_DATABASE_URL = base;
export const TEST_REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
