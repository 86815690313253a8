/**
 * `npm start`: checks PostgreSQL and Redis (outside production, starts an embedded PostgreSQL or
 * a local redis-server for one that does not answer: scripts/dev-services.ts), creates and
 * migrates the database, seeds a demo account on first start, then runs the API host, the web
 * host (one process, two ports), the MCP server and the worker as child processes (the MCP
 * server first: the others start once its /healthz answers, or after READY_WAIT_MS, or at once
 * on a port of 0, which is not known here), and prints its banner once the API and the
 * worker are ready (their /readyz answer 200: warm, docs/operations.md "Readiness"). Ctrl-C
 * stops them all, then the services it started.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { ConfigError, WARNED_MARKER, loadConfig, seedDemoIfEmpty } from '@teamchat/core';
import { createDatabase, ensureDatabase, runMigrations } from '@teamchat/db';
import { DevServiceError, ensureDevServices, stopDevServices, type DevService } from './dev-services';
import { ensureWebBuild } from './web-build';

const ROOT = path.resolve(__dirname, '..');
const HOW_TO_START = 'start it with `docker compose -f docker/compose.yml up -d postgres redis`, or the system service';

function die(line: string): never {
  process.stderr.write(`${line}\n`);
  process.exit(1);
}

function run(name: string, entry: string): ChildProcess {
  // tsx as a loader inside the service's own process (`node --import tsx`), not its CLI: the CLI
  // is a parent process that relays a signal and, when the service has not acknowledged it within
  // 30 ms (a loaded machine), kills it with SIGKILL: no drain.
  // Each child in its own process group: Ctrl-C (SIGINT to the terminal's group) reaches only this
  // supervisor, which sends each child ONE SIGTERM; a child that also got the terminal's SIGINT
  // would take the SIGTERM as a second signal and exit without draining.
  const child = spawn(process.execPath, ['--import', 'tsx', entry], { cwd: ROOT, stdio: 'inherit', detached: true, env: { ...process.env, ...childEnv, [WARNED_MARKER]: '1' } });
  child.on('exit', (code, signal) => {
    if (stopping) return;
    process.stderr.write(`${name} exited (${signal ?? code}); stopping the others.\n`);
    stop(1);
  });
  return child;
}

/** How long the banner waits for the processes to be ready (ms). */
const READY_WAIT_MS = 120_000;

/** Polls a /readyz (or /healthz) until it answers 200 (true) or READY_WAIT_MS pass (false). */
async function waitForReady(url: string): Promise<boolean> {
  const deadline = Date.now() + READY_WAIT_MS;
  while (!stopping && Date.now() < deadline) {
    const ok = await fetch(url, { signal: AbortSignal.timeout(2_000) }).then((r) => r.status === 200, () => false);
    if (ok) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return false;
}

let stopping = false;
const children: ChildProcess[] = [];
/** Services this start started (embedded PostgreSQL, redis-server): stopped after the children. */
let started: DevService[] = [];
/** The URLs the children use when a service was started here. */
const childEnv: Record<string, string> = {};
function stop(code: number): void {
  if (stopping) return;
  stopping = true;
  for (const c of children) c.kill('SIGTERM');
  const exited = Promise.all(children.map((c) => new Promise((r) => (c.exitCode !== null || c.signalCode !== null ? r(null) : c.once('exit', r)))));
  // The children drain first (up to their SHUTDOWN_TIMEOUT_MS), then the services they used stop.
  const deadline = new Promise((r) => setTimeout(r, 30_000).unref());
  void Promise.race([exited, deadline])
    .then(() => stopDevServices(started))
    .then(() => process.exit(code));
}

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig(process.env);
  } catch (err) {
    if (err instanceof ConfigError) die(err.message);
    throw err;
  }
  process.once('SIGINT', () => stop(0));
  process.once('SIGTERM', () => stop(0));
  process.once('SIGHUP', () => stop(0)); // the terminal closed: the detached children would outlive it
  let services;
  try {
    services = await ensureDevServices({
      databaseUrl: config.databaseUrl, redisUrl: config.redisUrl, nodeEnv: config.nodeEnv, dataDir: config.devDataDir, howToStart: HOW_TO_START,
    });
  } catch (err) {
    if (err instanceof DevServiceError) die(err.message);
    throw err;
  }
  started = services.started;
  for (const s of started) process.stdout.write(`started ${s.description}; it stops with npm start\n`);
  if (services.databaseUrl !== config.databaseUrl) childEnv.DATABASE_URL = services.databaseUrl;
  if (services.redisUrl !== config.redisUrl) childEnv.REDIS_URL = services.redisUrl;
  if (stopping) return;
  const databaseUrl = services.databaseUrl;
  if (await ensureDatabase(databaseUrl)) process.stdout.write(`created database ${new URL(databaseUrl).pathname.slice(1)}\n`);
  await runMigrations(databaseUrl);

  const database = createDatabase(databaseUrl, { max: 2, application_name: 'start' });
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
  // The MCP server first, and the API and worker once it listens: its start (loading its code,
  // ~3 s of a core on a 2-core machine) otherwise runs on past their readiness, and the first
  // seconds of load after the banner met it (docs/operations.md "Readiness").
  children.push(run('mcp', 'apps/mcp/src/server.ts'));
  if (config.mcpPort !== 0 && !(await waitForReady(`http://127.0.0.1:${config.mcpPort}/healthz`)) && !stopping) {
    process.stderr.write(`the MCP server did not answer /healthz within ${READY_WAIT_MS / 1000} s (see its log); starting the others anyway\n`);
  }
  if (stopping) return;
  children.push(run('api', 'apps/api/src/server.ts'));
  children.push(run('worker', 'apps/worker/src/main.ts'));
  // The banner follows every process's readiness (the MCP server's on its operations port). A port
  // of 0 (the system picks one) is not known here: that process is not waited for.
  const probes = [config.apiPort, config.workerOpsPort, config.mcpOpsPort].filter((port) => port !== 0);
  const ready = await Promise.all(probes.map((port) => waitForReady(`http://127.0.0.1:${port}/readyz`)));
  if (stopping) return;
  if (!ready.every(Boolean)) process.stderr.write(`not ready after ${READY_WAIT_MS / 1000} s (see the processes' logs); the banner follows anyway\n`);
  process.stdout.write(
    `API host ${config.publicApiUrl}  ·  web host ${config.publicWebUrl}  ·  MCP http://localhost:${config.mcpPort}/mcp  ·  worker running\n`,
  );
}

main().catch((err: Error) => {
  process.stderr.write(`start failed: ${err.message}\n`);
  void stopDevServices(started).then(() => process.exit(1));
});
