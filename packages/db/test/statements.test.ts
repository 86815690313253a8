/**
 * Named statements (packages/db statements.ts) run on the database and, inside a
 * transaction, on the transaction's own connection; a name cannot be reused for other SQL.
 */
import { createDatabase, runStatement, statement } from '@teamchat/db';
import { testDatabaseUrl } from '../../../test/support/env';

const database = createDatabase(testDatabaseUrl(), { max: 2 });
afterAll(() => database.close());

const txidNow = statement<{ txid: string }>('test_statements_txid', 'SELECT txid_current_if_assigned()::text AS txid');
const echo = statement<{ v: string }>('test_statements_echo', 'SELECT $1::text AS v');

test('a statement runs with its values, on the pool and again (prepared once per connection)', async () => {
  expect(await runStatement(database.db, echo, ['a'])).toEqual([{ v: 'a' }]);
  expect(await runStatement(database.db, echo, ['b'])).toEqual([{ v: 'b' }]);
});

test('inside a transaction a statement runs on that transaction (it sees its transaction id)', async () => {
  await database.db.transaction(async (tx) => {
    await tx.execute('CREATE TEMP TABLE IF NOT EXISTS statements_probe (x int) ON COMMIT DROP');
    await tx.execute('INSERT INTO statements_probe VALUES (1)');
    const [{ txid }] = await runStatement(tx, txidNow, []);
    expect(txid).not.toBeNull();
    const outside = await runStatement(database.db, txidNow, []);
    expect(outside[0].txid).toBeNull();
  });
});

test('a name defined twice with different SQL is refused at definition', () => {
  expect(() => statement('test_statements_echo', 'SELECT 2')).toThrow(/defined twice/);
  expect(statement('test_statements_echo', 'SELECT  $1::text AS v').name).toBe('test_statements_echo');
});
