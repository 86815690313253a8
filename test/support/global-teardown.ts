import { Client } from 'pg';
import { TEST_SERVER_URL } from './env';

/** Drops this run's database. */
export default async function globalTeardown(): Promise<void> {
  const url = process.env.TEST_DATABASE_URL;
  if (!url) return;
  const name = new URL(url).pathname.slice(1);
  const client = new Client({ connectionString: TEST_SERVER_URL });
  await client.connect();
  await client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`).catch(() => undefined);
  await client.end();
}
