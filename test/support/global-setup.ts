import { createMigratedDatabase } from './databases';

/** A fresh database for every run, built by the real migrations (never a schema push). */
export default async function globalSetup(): Promise<void> {
  const { url } = await createMigratedDatabase(`teamchat_test_${Date.now().toString(36)}`);
  process.env.TEST_DATABASE_URL = url;
}
