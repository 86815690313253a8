import path from 'node:path';
import { ensureDevServices, DevServiceError, type DevService } from '../../scripts/dev-services';
import { createMigratedDatabase } from './databases';
import { testServerUrl } from './env';

const ROOT = path.resolve(__dirname, '../..');

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
  const { url } = await createMigratedDatabase(`teamchat_test_${Date.now().toString(36)}`);
  process.env.TEST_DATABASE_URL = url;
}
