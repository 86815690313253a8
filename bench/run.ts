/**
 * `npm run bench`: runs every bench/*.bench.ts in turn against the real PostgreSQL and Redis
 * (a throwaway database per run) and prints each one's figures. `npm run bench -- messages`
 * runs only the files whose name contains "messages".
 *
 * A bench file default-exports `async function (ctx: BenchContext): Promise<BenchResult>`.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { runMigrations } from '@teamchat/db';

export interface BenchContext {
  /** a freshly migrated database for this bench run */
  databaseUrl: string;
  redisUrl: string;
}

export interface BenchResult {
  title: string;
  /** rows of figures, printed as a table */
  rows: Array<Record<string, string | number>>;
  notes?: string[];
}

const SERVER_URL = process.env.TEST_SERVER_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

async function main(): Promise<void> {
  const filter = process.argv[2];
  const files = fs
    .readdirSync(__dirname)
    .filter((f) => f.endsWith('.bench.ts') && (!filter || f.includes(filter)))
    .sort();
  const name = `teamchat_bench_${randomBytes(4).toString('hex')}`;
  const admin = new Client({ connectionString: SERVER_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${name}"`);
  const url = new URL(SERVER_URL);
  url.pathname = `/${name}`;
  const ctx: BenchContext = { databaseUrl: url.toString(), redisUrl: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379' };
  try {
    await runMigrations(ctx.databaseUrl);
    console.log(`machine: ${os.cpus().length} × ${os.cpus()[0]?.model}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, node ${process.version}`);
    for (const file of files) {
      const mod = (await import(path.join(__dirname, file))) as { default: (c: BenchContext) => Promise<BenchResult> };
      const result = await mod.default(ctx);
      console.log(`\n## ${result.title}`);
      console.table(result.rows);
      for (const note of result.notes ?? []) console.log(`- ${note}`);
    }
  } finally {
    await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`).catch(() => undefined);
    await admin.end();
  }
}

main().then(
  () => process.exit(0),
  (err: Error) => {
    console.error(err.stack);
    process.exit(1);
  },
);
