/**
 * The pool survives its connections being cut (found by the fault suite, docs/operations.md: PostgreSQL
 * backends terminated under load crashed the API). A connection checked out of the pool (inside
 * a transaction, between two queries) whose backend dies emits `error` on its pg Client; with no
 * listener that is an uncaught exception and the process dies. The pool must swallow it, drop
 * the dead connection, and answer the next query on a new one.
 */
import { Client } from 'pg';
import { createDatabase, sql } from '@teamchat/db';
import { testDatabaseUrl } from '../../../test/support/env';

const database = createDatabase(testDatabaseUrl(), { max: 2, application_name: 'client_test' });
afterAll(() => database.close());

test('a checked-out connection whose backend is terminated between queries does not crash the process', async () => {
  const uncaught: Error[] = [];
  const onUncaught = (err: Error) => uncaught.push(err);
  process.prependListener('uncaughtException', onUncaught);
  const admin = new Client({ connectionString: testDatabaseUrl() });
  await admin.connect();
  try {
    const outcome = database.db.transaction(async (tx) => {
      const r = await tx.execute<{ pid: number }>(sql`SELECT pg_backend_pid() AS pid`);
      // Between two statements of the transaction (no query active): the backend goes away.
      await admin.query('SELECT pg_terminate_backend($1)', [r.rows[0].pid]);
      await new Promise((resolve) => setTimeout(resolve, 500)); // the socket's close reaches the client
      await tx.execute(sql`SELECT 1`);
    });
    await expect(outcome).rejects.toThrow();
    expect(uncaught).toEqual([]);
    // The pool drops the dead connection and answers on a new one.
    const again = await database.db.execute<{ one: number }>(sql`SELECT 1 AS one`);
    expect(again.rows[0].one).toBe(1);
  } finally {
    process.removeListener('uncaughtException', onUncaught);
    await admin.end();
  }
});

test('a transaction whose BEGIN fails gives its connection back to the pool (no leak, no pool exhausted)', async () => {
  const small = createDatabase(testDatabaseUrl(), { max: 2, application_name: 'client_test' });
  try {
    // A BEGIN the server refuses, as a BEGIN on a connection cut at that moment fails.
    const badBegin = { isolationLevel: 'no such level' } as unknown as Parameters<typeof small.db.transaction>[1];
    for (let i = 0; i < 4; i++) {
      await expect(small.db.transaction(async () => 'never', badBegin)).rejects.toThrow(/begin/);
    }
    expect(small.pool.totalCount - small.pool.idleCount).toBe(0); // nothing left checked out
    const answered = await Promise.race([
      small.db.transaction(async (tx) => (await tx.execute<{ one: number }>(sql`SELECT 1 AS one`)).rows[0].one),
      new Promise((resolve) => setTimeout(() => resolve('pool exhausted'), 5000)),
    ]);
    expect(answered).toBe(1);
  } finally {
    await small.close();
  }
});

test('customPlans: every execution of a named statement is planned with its parameters, never from a cached generic plan', async () => {
  const custom = createDatabase(testDatabaseUrl(), { max: 1, application_name: 'client_test_custom', customPlans: true });
  const client = await custom.pool.connect();
  try {
    expect((await client.query('SHOW plan_cache_mode')).rows[0].plan_cache_mode).toBe('force_custom_plan');
    expect((await client.query('SHOW max_parallel_workers_per_gather')).rows[0].max_parallel_workers_per_gather).toBe('0');
    await client.query('PREPARE by_ids(text[]) AS SELECT id FROM accounts WHERE id = ANY($1)');
    // Past the five executions after which PostgreSQL may switch a statement to its generic plan.
    for (let i = 0; i < 8; i++) await client.query(`EXECUTE by_ids('{acct_x${i}}')`);
    const plan = (await client.query(`EXPLAIN EXECUTE by_ids('{acct_probe}')`)).rows.map((r) => r['QUERY PLAN']).join('\n');
    expect(plan).toContain('acct_probe'); // a custom plan carries the value; a generic one says $1
    expect(plan).not.toContain('$1');
  } finally {
    client.release();
    await custom.close();
  }
  const plain = await database.pool.connect();
  try {
    expect((await plain.query('SHOW plan_cache_mode')).rows[0].plan_cache_mode).toBe('auto');
  } finally {
    plain.release();
  }
});
