/**
 * `npm start`: checks PostgreSQL and Redis, creates and migrates the database, seeds a demo
 * account on first start, then runs the API host, the web host (one process, two ports), the MCP
 * server and the worker as child processes. Ctrl-C stops them all.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { Client } from 'pg';
import Redis from 'ioredis';
import { ConfigError, loadConfig } from '@teamchat/core';
import { createDatabase, ensureDatabase, runMigrations } from '@teamchat/db';
import { seedDemoIfEmpty } from './seed-demo';
import { ensureWebBuild } from './web-build';

const ROOT = path.resolve(__dirname, '..');
const HOW_TO_START = 'start it with `docker compose -f docker/compose.yml up -d postgres redis`, or the system service';

function die(line: string): never {
  process.stderr.write(`${line}\n`);
  process.exit(1);
}

async function checkPostgres(url: string): Promise<void> {
  const server = new URL(url);
  server.pathname = '/postgres';
  const client = new Client({ connectionString: server.toString(), connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
  } catch (err) {
    die(`PostgreSQL is not reachable at ${server.host} (${(err as Error).message}): ${HOW_TO_START} (e.g. \`pg_ctlcluster <version> main start\`).`);
  } finally {
    await client.end().catch(() => undefined);
  }
}

async function checkRedis(url: string): Promise<void> {
  const redis = new Redis(url, { lazyConnect: true, connectTimeout: 3000, maxRetriesPerRequest: 0, retryStrategy: () => null });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
    await redis.ping();
  } catch (err) {
    die(`Redis is not reachable at ${new URL(url).host} (${(err as Error).message}): ${HOW_TO_START} (e.g. \`redis-server --daemonize yes\`).`);
  } finally {
    redis.disconnect();
  }
}

function run(name: string, entry: string): ChildProcess {
  const tsx = require.resolve('tsx/cli');
  const child = spawn(process.execPath, [tsx, entry], { cwd: ROOT, stdio: 'inherit', env: process.env });
  child.on('exit', (code, signal) => {
    if (stopping) return;
    process.stderr.write(`${name} exited (${signal ?? code}); stopping the others.\n`);
    stop(1);
  });
  return child;
}

let stopping = false;
const children: ChildProcess[] = [];
function stop(code: number): void {
  stopping = true;
  for (const c of children) c.kill('SIGTERM');
  setTimeout(() => process.exit(code), 3000).unref();
  void Promise.all(children.map((c) => new Promise((r) => (c.exitCode !== null ? r(null) : c.once('exit', r))))).then(() => process.exit(code));
}

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig(process.env);
  } catch (err) {
    if (err instanceof ConfigError) die(err.message);
    throw err;
  }
  await checkPostgres(config.databaseUrl);
  await checkRedis(config.redisUrl);
  if (await ensureDatabase(config.databaseUrl)) process.stdout.write(`created database ${new URL(config.databaseUrl).pathname.slice(1)}\n`);
  await runMigrations(config.databaseUrl);

  const database = createDatabase(config.databaseUrl, { max: 2, application_name: 'start' });
  try {
    const demo = await seedDemoIfEmpty(database.db);
    if (demo) {
      process.stdout.write(
        [
          '',
          '=== Demo account created (shown once; keep it) ===',
          `account:   ${demo.accountId}`,
          `owner:     ${demo.email} / ${demo.password}   (sign in on the web host)`,
          `API key:   ${demo.apiKey}`,
          `web app:   ${config.publicWebUrl}   (sign in as the owner above)`,
          '',
          'Try:',
          `  curl -H "Authorization: Bearer ${demo.apiKey}" ${config.publicApiUrl}/accounts/${demo.accountId}`,
          `  curl -c /tmp/tc.cookies -H 'Content-Type: application/json' -d '{"email":"${demo.email}","password":"${demo.password}"}' ${config.publicWebUrl}/auth/sign-in`,
          `  curl -b /tmp/tc.cookies ${config.publicWebUrl}/accounts/${demo.accountId}`,
          '',
          'MCP (docs/mcp.md): point a Streamable HTTP client at',
          `  http://localhost:${config.mcpPort}/mcp   with the header   Authorization: Bearer ${demo.apiKey}`,
          '',
        ].join('\n') + '\n',
      );
    }
  } finally {
    await database.close();
  }

  // The web host serves the app's build (docs/web.md); make it when it is missing or stale.
  try {
    ensureWebBuild((line) => process.stdout.write(`${line}\n`));
  } catch (err) {
    die(`the web app did not build: ${(err as Error).message}`);
  }
  children.push(run('api', 'apps/api/src/server.ts'));
  children.push(run('mcp', 'apps/mcp/src/server.ts'));
  children.push(run('worker', 'apps/worker/src/main.ts'));
  process.stdout.write(
    `API host ${config.publicApiUrl}  ·  web host ${config.publicWebUrl}  ·  MCP http://localhost:${config.mcpPort}/mcp  ·  worker running\n`,
  );
  process.once('SIGINT', () => stop(0));
  process.once('SIGTERM', () => stop(0));
}

main().catch((err: Error) => die(`start failed: ${err.message}`));
