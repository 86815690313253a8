import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';

/**
 * A throwaway PgBouncer (Debian's `pgbouncer`) in TRANSACTION pooling mode on a spare loopback
 * port, in front of the test PostgreSQL (docs/operations.md "PgBouncer"): every database name is
 * passed through to 127.0.0.1:5432, trust auth, `default_pool_size` server connections per
 * database. PgBouncer refuses to run as root, so as root it drops to the `postgres` user.
 */
export interface TestPgBouncer {
  port: number;
  /** the URL of `database` through PgBouncer */
  urlOf(database: string): string;
  /** SHOW <what> on the admin console (SHOW STATS, SHOW POOLS) */
  show(what: string): Promise<Array<Record<string, unknown>>>;
  stop(): Promise<void>;
}

async function sparePort(): Promise<number> {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 10_000);
    const free = await new Promise<boolean>((resolve) => {
      const srv = net.createServer();
      srv.once('error', () => resolve(false));
      srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
    });
    if (free) return port;
  }
}

export async function startTestPgBouncer(options: { serverHost?: string; serverPort?: number; poolSize?: number } = {}): Promise<TestPgBouncer> {
  const port = await sparePort();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'teamchat-pgbouncer-'));
  fs.writeFileSync(path.join(dir, 'userlist.txt'), '"postgres" ""\n');
  fs.writeFileSync(path.join(dir, 'pgbouncer.ini'), [
    '[databases]',
    `* = host=${options.serverHost ?? '127.0.0.1'} port=${options.serverPort ?? 5432}`,
    '[pgbouncer]',
    'listen_addr = 127.0.0.1',
    `listen_port = ${port}`,
    'unix_socket_dir =',
    'auth_type = trust',
    `auth_file = ${path.join(dir, 'userlist.txt')}`,
    'admin_users = postgres',
    'pool_mode = transaction',
    `default_pool_size = ${options.poolSize ?? 10}`,
    'max_client_conn = 500',
    // node-postgres sends nothing else at start-up here (statement_timeout is SET LOCAL in transaction mode).
    'ignore_startup_parameters = extra_float_digits',
    `logfile = ${path.join(dir, 'pgbouncer.log')}`,
    `pidfile = ${path.join(dir, 'pgbouncer.pid')}`,
    '',
  ].join('\n'));
  const asRoot = process.getuid?.() === 0;
  if (asRoot) execFileSync('chown', ['-R', 'postgres', dir]);
  const child: ChildProcess = spawn('pgbouncer', [...(asRoot ? ['-u', 'postgres'] : []), path.join(dir, 'pgbouncer.ini')], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (c: Buffer) => { stderr += c.toString(); });
  const urlOf = (database: string) => `postgres://postgres@127.0.0.1:${port}/${database}`;
  const deadline = Date.now() + 15_000;
  for (;;) {
    const c = new Client({ connectionString: urlOf('pgbouncer') });
    try {
      await c.connect();
      await c.end();
      break;
    } catch (err) {
      await c.end().catch(() => undefined);
      if (child.exitCode !== null || Date.now() > deadline) {
        child.kill('SIGKILL');
        const log = fs.existsSync(path.join(dir, 'pgbouncer.log')) ? fs.readFileSync(path.join(dir, 'pgbouncer.log'), 'utf8') : '';
        throw new Error(`pgbouncer did not start: ${(err as Error).message}\n${stderr}\n${log}`, { cause: err });
      }
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  return {
    port,
    urlOf,
    async show(what) {
      const c = new Client({ connectionString: urlOf('pgbouncer') });
      await c.connect();
      try {
        return (await c.query(`SHOW ${what}`)).rows as Array<Record<string, unknown>>;
      } finally {
        await c.end();
      }
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGINT');
        await exited;
      }
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
