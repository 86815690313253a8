import path from 'node:path';
import { ensureDevServices, DevServiceError, POSTGRES_MAX_CONNECTIONS, type DevService } from '../../scripts/dev-services';
import { createMigratedDatabase, serverSetting } from './databases';
import { testServerUrl } from './env';
import { ensureWebBuild } from '../../scripts/web-build';

const ROOT = path.resolve(__dirname, '../..');

/** Warns (once, before the suites run) when the test server allows fewer connections than the suite may hold at once. */
async function checkConnectionBudget(): Promise<void> {
  const max = Number(await serverSetting('max_connections'));
  if (max < POSTGRES_MAX_CONNECTIONS) {
    process.stdout.write(`\nPostgreSQL allows ${max} connections; the suite may need up to ${POSTGRES_MAX_CONNECTIONS} at once and some tests may then fail with "too many clients". Raise it: ALTER SYSTEM SET max_connections = ${POSTGRES_MAX_CONNECTIONS}; then restart PostgreSQL.\n`);
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
  if (services.redisUrl !== redisUrl) process.env.REDIS_URL = services.redisUrl;
  await checkConnectionBudget();
  // The browser tests (apps/web/test) drive the built app; built once here, before the workers start.
  ensureWebBuild((line) => process.stdout.write(`${line}\n`));
  const { url } = await createMigratedDatabase(`teamchat_test_${Date.now().toString(36)}`);
  process.env.TEST_DATABASE_URL = url;
}
