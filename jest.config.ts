import type { Config } from 'jest';

/**
 * One Jest run for the whole monorepo. ts-jest transpiles only (isolatedModules); type errors
 * are `npm run typecheck`'s job. Tests use the real PostgreSQL and Redis: globalSetup makes a
 * fresh migrated database for the run.
 */
const config: Config = {
  testEnvironment: 'node',
  roots: ['<rootDir>/apps', '<rootDir>/packages', '<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: { '^.+\\.ts$': ['ts-jest', { diagnostics: false }] },
  // Every response the API's apps give a test through supertest must match the OpenAPI document.
  setupFilesAfterEnv: ['<rootDir>/test/support/openapi-responses.ts'],
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
  testTimeout: 30_000,
  maxWorkers: 2,
  reporters: ['default', '<rootDir>/test/support/summary-reporter.js'],
};

export default config;
