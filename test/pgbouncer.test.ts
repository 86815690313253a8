import { createDatabase, runStatement, sql, statement } from '@teamchat/db';
import { startTestPgBouncer, type TestPgBouncer } from './support/pgbouncer';
import { buildLedger, expectNothingLost, printLedger, settle } from './faults/support/ledger';
import { SETTLE_MS, startStack, type Stack } from './faults/support/stack';
import { startLoad, tenant, waitForPosts } from './faults/support/traffic';

/**
 * Running behind PgBouncer in transaction pooling mode (docs/operations.md "PgBouncer"): the API
 * and two workers as real processes, their pools through a real PgBouncer (DATABASE_POOL_MODE=
 * transaction), one worker with a direct connection for the relay's LISTEN (DATABASE_DIRECT_URL)
 * and one without (it polls); members post, every event reaches both endpoints, the ledger holds.
 */
let pgb: TestPgBouncer;
let s: Stack | undefined;
beforeAll(async () => {
  pgb = await startTestPgBouncer({ poolSize: 8 });
}, 30_000);
afterAll(async () => {
  await s?.close();
  await pgb?.stop();
});

const databaseOf = (url: string) => new URL(url).pathname.slice(1);

test('through PgBouncer (transaction mode) each transaction carries its own statement_timeout and named statements run unnamed', async () => {
  const database = createDatabase(pgb.urlOf('postgres'), { max: 4, statementTimeoutMs: 1234, poolMode: 'transaction' });
  try {
    const timeouts = await Promise.all(Array.from({ length: 8 }, () => database.db.transaction(async (tx) => {
      const r = await tx.execute<{ statement_timeout: string }>(sql`SHOW statement_timeout`);
      return r.rows[0].statement_timeout;
    })));
    expect(new Set(timeouts)).toEqual(new Set(['1234ms']));
    // Outside a transaction the session keeps the server's default: nothing leaked into the pooled connection.
    const outside = await database.db.execute<{ statement_timeout: string }>(sql`SHOW statement_timeout`);
    expect(outside.rows[0].statement_timeout).toBe('0');
    // A named statement, many times over the pool: PgBouncer hands each use any server connection.
    const st = statement<{ n: number }>('pgbouncer_test_one', 'SELECT $1::int AS n');
    const results = await Promise.all(Array.from({ length: 40 }, (_, i) => runStatement(database.db, st, [i])));
    expect(results.map((r) => r[0].n)).toEqual(Array.from({ length: 40 }, (_, i) => i));
    // …and the bound is enforced: cut by statement_timeout (SQLSTATE 57014).
    const cut = await database.db.transaction(async (tx) => tx.execute(sql`SELECT pg_sleep(2)`)).then(() => null, (err: Error & { cause?: { code?: string } }) => err);
    expect(cut?.cause?.code ?? (cut as { code?: string } | null)?.code).toBe('57014');
  } finally {
    await database.close();
  }
});

test('the API and workers through PgBouncer in transaction mode: posts answered, every event delivered, nothing lost', async () => {
  let directUrl = '';
  s = await startStack('pgbouncer', {
    processDatabase: (dbUrl) => {
      directUrl = dbUrl;
      return { DATABASE_URL: pgb.urlOf(databaseOf(dbUrl)), DATABASE_POOL_MODE: 'transaction' };
    },
    // worker1 LISTENs on a direct connection; worker2 has none, so its relay (when it leads) polls
    processEnv: (name) => (name === 'worker1' ? { DATABASE_DIRECT_URL: directUrl } : {}),
  });
  const t = await tenant(s, { seats: 6, endpoints: [{ path: '/a' }, { path: '/b', behaviour: { status: 200, delayMs: 50 } }] });
  await s.startApi();
  await s.startWorker();
  await s.startWorker();
  const load = startLoad(s, t);
  await waitForPosts(load, 60);
  const posts = await load.stop();
  const settled = await settle(s, t, ['/a', '/b'], SETTLE_MS);
  const ledger = await buildLedger(s, 'API and workers behind PgBouncer (transaction pooling)', t, posts, ['/a', '/b']);
  const pools = (await pgb.show('POOLS')).filter((p) => p.database === databaseOf(s!.dbUrl));
  const stats = (await pgb.show('STATS')).filter((p) => p.database === databaseOf(s!.dbUrl));
  const serverConnections = pools.reduce((n, p) => n + Number(p.sv_active) + Number(p.sv_idle) + Number(p.sv_used) + Number(p.sv_tested) + Number(p.sv_login), 0);
  const clients = pools.reduce((n, p) => n + Number(p.cl_active) + Number(p.cl_waiting), 0);
  printLedger(ledger, [
    `through PgBouncer: ${stats[0]?.total_xact_count} transactions, ${stats[0]?.total_query_count} queries | client connections ${clients} on ${serverConnections} server connections (pool 8)`,
  ]);
  expect(settled).toBe(true);
  // A post this loaded machine left unanswered is still all or nothing (the ledger); most are answered.
  expect(ledger.answered2xx).toBeGreaterThan(ledger.posts / 2);
  expectNothingLost(ledger);
  expect(Number(stats[0]?.total_xact_count)).toBeGreaterThan(ledger.posts);
  expect(serverConnections).toBeLessThanOrEqual(8);
  for (const p of [...s.apis, ...s.workers]) expect(p.alive()).toBe(true);
}, 600_000);
