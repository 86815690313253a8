/**
 * A person's password is settled before the transaction that creates them (docs/api.md "Errors":
 * slow CPU work never runs inside a transaction): preparePerson checks an existing person's
 * password or hashes a new one's, ensureUser only reads or inserts.
 */
import { randomBytes } from 'node:crypto';
import { createDatabase, type Database } from '@teamchat/db';
import { AppError, ensureUser, findUserByEmail, newPerson, openAccount, preparePerson, verifyPassword } from '@teamchat/core';
import { testDatabaseUrl } from '../../../test/support/env';

let database: Database;
const email = (tag: string) => `${tag}-${randomBytes(4).toString('hex')}@prepared.test`;

beforeAll(() => {
  database = createDatabase(testDatabaseUrl(), { max: 2 });
});
afterAll(() => database.close());

test('a new person is hashed before the transaction; the stored hash verifies the password', async () => {
  const who = email('new');
  const prepared = await preparePerson(database.db, who, 'password one');
  expect('passwordHash' in prepared).toBe(true);
  const row = await database.db.transaction((tx) => ensureUser(tx, prepared));
  expect(row.email).toBe(who);
  expect(await verifyPassword('password one', row.passwordHash)).toBe(true);
});

test('an existing person: the right password prepares their id, a wrong one is refused before any write', async () => {
  const who = email('old');
  await openAccount(database.db, { plan: 'pro', ownerEmail: who, ownerPassword: 'password one' });
  const user = (await findUserByEmail(database.db, who))!;
  expect(await preparePerson(database.db, who, 'password one')).toEqual({ email: who, userId: user.id });
  const refused = await preparePerson(database.db, who, 'password two').catch((e: unknown) => e);
  expect(refused).toBeInstanceOf(AppError);
  expect((refused as AppError).status).toBe(400);
  // openAccount refuses the same way and opens nothing.
  const second = await openAccount(database.db, { plan: 'pro', ownerEmail: who, ownerPassword: 'password two' }).catch((e: unknown) => e);
  expect(second).toBeInstanceOf(AppError);
});

test('a person added between preparing and the transaction is refused (their password was never checked)', async () => {
  const who = email('race');
  const prepared = await newPerson(who, 'password one');
  await openAccount(database.db, { plan: 'pro', ownerEmail: who, ownerPassword: 'someone else' });
  const refused = await database.db.transaction((tx) => ensureUser(tx, prepared)).catch((e: unknown) => e);
  expect(refused).toBeInstanceOf(AppError);
  expect((refused as AppError).status).toBe(400);
});
