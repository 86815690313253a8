import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { runMigrations } from '@teamchat/db';
import { TEST_SERVER_URL } from './env';

/** A fresh database for every run, built by the real migrations (never a schema push). */
export default async function globalSetup(): Promise<void> {
  const name = `teamchat_test_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
  const client = new Client({ connectionString: TEST_SERVER_URL });
  await client.connect();
  await client.query(`CREATE DATABASE "${name}"`);
  await client.end();
  const url = new URL(TEST_SERVER_URL);
  url.pathname = `/${name}`;
  process.env.TEST_DATABASE_URL = url.toString();
  await runMigrations(url.toString());
}
