import path from 'node:path';
import { Client } from 'pg';
import { ensureDevServices, DevServiceError, type DevService } from '../../scripts/dev-services';
import { createMigratedDatabase } from './databases';
import { testServerUrl } from './env';
import { ensureWebBuild } from '../../scripts/web-build';

const ROOT = path.resolve(__dirname, '../..');

/**
 * Connections the suite may hold at once: with two Jest workers, a suite with two worker
 * processes (21 connections each) can run beside one with two harnesses (20 each) and their
 * per-suite databases' admin connections, past PostgreSQL's default of 100, which then refuses
 * connections ("too many clients") and the requests that needed them fail. The embedded server,
 * docker/compose.yml and `.ci/run` give PostgreSQL this many; a server with fewer is warned of.
 */
export const TEST_MAX_CONNECTIONS = 200;

/** Warns (once, before the suites run) when the test server allows fewer than TEST_MAX_CONNECTIONS connections. */
async function checkConnectionBudget(databaseUrl: string): Promise<void> {
  const client = new Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const max = Number((await client.query<{ max_connections: string }>('SHOW max_connections')).rows[0].max_connections);
    if (max < TEST_MAX_CONNECTIONS) {
      process.stdout.write(`\nPostgreSQL allows ${max} connections; the suite may need up to ${TEST_MAX_CONNECTIONS} at once and some tests may then fail with "too many clients". Raise it: ALTER SYSTEM SET max_connections = ${TEST_MAX_CONNECTIONS}; then restart PostgreSQL.\n`);
    }
  } finally {
    await client.end();
  }
}

/** What global setup started, for global teardown (both run in Jest's parent process). */
export const started: { services: DevService[] } = ((globalThis as Record<string, unknown>).__teamchatTestServices ??= { services: [] }) as { services: DevService[] };

/**
 * A fresh database for every run, built by the real migrations (never a schema push). When the
 * configured PostgreSQL or Redis does not answer, an embedded PostgreSQL or a local redis-server
 * is started for the run (data under `.data/test`) and stopped by global teardown.
 */
export default async function globalSetup(): Promise<void> {
  const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  let services;
  try {
    services = await ensureDevServices({
      databaseUrl: testServerUrl(),
      redisUrl,
      nodeEnv: process.env.NODE_ENV ?? 'test',
      dataDir: path.resolve(ROOT, process.env.DEV_DATA_DIR ?? '.data', 'test'),
      howToStart: 'start it with `docker compose -f docker/compose.yml up -d postgres redis`, or the system service',
    });
  } catch (err) {
    if (err instanceof DevServiceError) throw new Error(err.message, { cause: err });
    throw err;
  }
  started.services = services.started;
  for (const s of services.started) process.stdout.write(`\nstarted ${s.description} for this run\n`);
  if (services.databaseUrl !== testServerUrl()) process.env.TEST_SERVER_URL = services.databaseUrl;
  await checkConnectionBudget(services.databaseUrl);
  if (services.redisUrl !== redisUrl) process.env.REDIS_URL = services.redisUrl;
  // The browser tests (apps/web/test) drive the built app; built once here, before the workers start.
  ensureWebBuild((line) => process.stdout.write(`${line}\n`));
  const { url } = await createMigratedDatabase(`teamchat_test_${Date.now().toString(36)}`);
  process.env.TEST_DATABASE_URL = url;
}
