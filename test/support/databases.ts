import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { runMigrations } from '@teamchat/db';
import { testServerUrl } from './env';

/**
 * A database of its own on the test server, built by the real migrations (never a schema push):
 * the run's database (global setup), and files or scenarios whose worker processes relay every
 * account's events, so no other test file's rows reach them.
 */
export async function createMigratedDatabase(prefix: string): Promise<{ name: string; url: string }> {
  const name = `${prefix}_${randomBytes(4).toString('hex')}`;
  await onServer(`CREATE DATABASE "${name}"`);
  const url = new URL(testServerUrl());
  url.pathname = `/${name}`;
  await runMigrations(url.toString());
  return { name, url: url.toString() };
}

/** Drops a database made by createMigratedDatabase, whoever is still connected to it. */
export async function dropDatabase(name: string): Promise<void> {
  await onServer(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`).catch(() => undefined);
}

/** A setting of the test server (`SHOW name`), as text. `name` is a setting's name, never interpolated otherwise. */
export async function serverSetting(name: string): Promise<string> {
  if (!/^[a-z_][a-z0-9_.]*$/.test(name)) throw new Error(`not a setting name: ${name}`);
  const rows = await onServer<Record<string, string>>(`SHOW ${name}`);
  return rows[0][name];
}

async function onServer<R extends Record<string, unknown> = Record<string, unknown>>(sql: string): Promise<R[]> {
  const admin = new Client({ connectionString: testServerUrl() });
  await admin.connect();
  try {
    return (await admin.query<R>(sql)).rows;
  } finally {
    await admin.end();
  }
}
