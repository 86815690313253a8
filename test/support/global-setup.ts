import { Client } from 'pg';
import { runMigrations } from '@teamchat/db';
import { TEST_DATABASE_URL } from './env';

/** A fresh database for every run, built by the real migrations (never a schema push). */
export default async function globalSetup(): Promise<void> {
  const url = new URL(TEST_DATABASE_URL);
  const name = url.pathname.slice(1);
  const admin = new URL(TEST_DATABASE_URL);
  admin.pathname = '/postgres';
  const client = new Client({ connectionString: admin.toString() });
  await client.connect();
  await client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
  await client.query(`CREATE DATABASE "${name}"`);
  await client.end();
  await runMigrations(TEST_DATABASE_URL);
}
