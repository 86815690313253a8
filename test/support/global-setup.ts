import { createMigratedDatabase } from './databases';
import { ensureWebBuild } from '../../scripts/web-build';

/** A fresh database for every run, built by the real migrations (never a schema push). */
export default async function globalSetup(): Promise<void> {
  // The browser tests (apps/web/test) drive the built app; built once here, before the workers start.
  ensureWebBuild((line) => process.stdout.write(`${line}\n`));
  const { url } = await createMigratedDatabase(`teamchat_test_${Date.now().toString(36)}`);
  process.env.TEST_DATABASE_URL = url;
}
