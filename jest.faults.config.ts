import type { Config } from 'jest';

/**
 * The fault suite (`npm run test:faults`; docs/operations.md "Proof: the fault suite"): real processes, injected faults,
 * a printed ledger per scenario. Kept apart from `npm test` (whose testMatch is *.test.ts):
 * scenarios take minutes and must run one at a time (they spawn their own API, workers, Redis).
 * globalSetup makes the run's database (the harness needs one); each scenario also makes its own.
 */
const config: Config = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test/faults'],
  testMatch: ['**/*.fault.ts'],
  transform: { '^.+\\.ts$': ['ts-jest', { diagnostics: false }] },
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
  testTimeout: 600_000,
  maxWorkers: 1,
  verbose: true,
};

export default config;
