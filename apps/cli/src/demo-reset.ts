import readline from 'node:readline/promises';
import { Client } from 'pg';
import { AppError, seedDemoIfEmpty } from '@teamchat/core';
import { createDatabase, ensureDatabase, runMigrations } from '@teamchat/db';

/**
 * `demo:reset` (README "Start it"): drops the local database and makes it again, migrated, with a
 * new demo account, whose owner password and API key it prints (shown once). Asks for the
 * database's name first, unless `--yes`; refused in production and for a database that is not
 * on this machine. A running `npm start` keeps going: its connections are ended and reconnect.
 */
const LOCAL_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]', '']);

export interface ResetIo {
  err(line: string): void;
}

export async function demoReset(databaseUrl: string, o: { yes: boolean }, io: ResetIo): Promise<Record<string, unknown>> {
  const url = new URL(databaseUrl);
  const name = decodeURIComponent(url.pathname.slice(1));
  if (!LOCAL_HOSTS.has(url.hostname)) {
    throw new AppError('forbidden', `demo:reset only resets a database on this machine; DATABASE_URL names ${url.host}.`);
  }
  if (!name || name === 'postgres' || name.startsWith('template')) throw new AppError('invalid_request', `demo:reset will not drop the database "${name}".`);
  if (!o.yes) {
    if (!process.stdin.isTTY) throw new AppError('invalid_request', 'demo:reset drops the database and all its data: confirm with --yes when not run interactively.');
    const rl = readline.createInterface({ input: process.stdin, output: process.stderr });
    const typed = await rl.question(`This drops the database "${name}" on ${url.host} and ALL its data, then makes a new demo account.\nType its name to confirm: `);
    rl.close();
    if (typed.trim() !== name) throw new AppError('invalid_request', 'not confirmed: nothing was dropped.');
  }
  const server = new URL(databaseUrl);
  server.pathname = '/postgres';
  const admin = new Client({ connectionString: server.toString() });
  await admin.connect();
  try {
    await admin.query(`DROP DATABASE IF EXISTS "${name.replace(/"/g, '""')}" WITH (FORCE)`);
  } finally {
    await admin.end();
  }
  io.err(`dropped database ${name}`);
  await ensureDatabase(databaseUrl);
  await runMigrations(databaseUrl);
  const database = createDatabase(databaseUrl, { max: 2, application_name: 'cli' });
  try {
    const demo = (await seedDemoIfEmpty(database.db))!;
    io.err(`created database ${name} with a new demo account (its password and key are shown only here)`);
    return { ok: true, database: name, account_id: demo.accountId, owner: { email: demo.email, password: demo.password }, api_key: demo.apiKey };
  } finally {
    await database.close();
  }
}
