/**
 * RelayWakeUps (events/wake.ts): after a commit of outbox rows the relay is woken by a
 * notification of its own; wake-ups asked for while one is on its way fold into one more.
 * Real PostgreSQL: a LISTEN connection counts what arrives.
 */
import { createDatabase, listen, type Database, type Listener } from '@teamchat/db';
import { randomBytes } from 'node:crypto';
import { relayWakeUpsOn, NO_RELAY_WAKE_UPS, RelayWakeUps } from '@teamchat/core';
import { testDatabaseUrl } from '../../../test/support/env';

const url = testDatabaseUrl();
/** A channel of this file's own: other test files notify EVENTS_CHANNEL in the same database. */
const CHANNEL = `wake_test_${randomBytes(6).toString('hex')}`;
let database: Database;
let listener: Listener;
let heard = 0;
const until = async (cond: () => boolean, ms = 5_000) => {
  const end = Date.now() + ms;
  while (!cond() && Date.now() < end) await new Promise((r) => setTimeout(r, 10));
};

beforeAll(async () => {
  database = createDatabase(url, { max: 2 });
  listener = listen(url, CHANNEL, () => { heard += 1; });
  // The LISTEN is in place once a notification of our own comes back.
  await until(() => { void database.pool.query(`SELECT pg_notify('${CHANNEL}', '')`); return heard > 0; });
  await new Promise((r) => setTimeout(r, 100));
});
afterAll(async () => {
  await listener.close();
  await database.close();
});

test('one wake-up: one notification, sent on the pool', async () => {
  const errors: Error[] = [];
  const wakeUps = relayWakeUpsOn(database.pool, true, (e) => errors.push(e), CHANNEL);
  heard = 0;
  wakeUps.committed();
  await until(() => heard >= 1);
  await new Promise((r) => setTimeout(r, 100));
  expect(heard).toBe(1);
  expect(errors).toEqual([]);
});

test('wake-ups asked for while one is on its way fold into ONE more, sent once it is back', async () => {
  const wakeUps = relayWakeUpsOn(database.pool, true, () => undefined, CHANNEL);
  heard = 0;
  for (let i = 0; i < 10; i += 1) wakeUps.committed();
  await until(() => heard >= 2);
  await new Promise((r) => setTimeout(r, 150));
  expect(heard).toBe(2);
});

test('nothing is sent where nobody listens (PgBouncer in transaction mode without a direct URL), nor by NO_RELAY_WAKE_UPS', async () => {
  heard = 0;
  relayWakeUpsOn(database.pool, false, () => undefined, CHANNEL).committed();
  NO_RELAY_WAKE_UPS.committed();
  await new Promise((r) => setTimeout(r, 150));
  expect(heard).toBe(0);
});

test('a failed wake-up is reported, and the next one is sent', async () => {
  const broken = createDatabase('postgres://postgres:postgres@127.0.0.1:1/none', { max: 1 });
  const errors: Error[] = [];
  const wakeUps = relayWakeUpsOn(broken.pool, true, (e) => errors.push(e), CHANNEL);
  wakeUps.committed();
  await until(() => errors.length >= 1);
  wakeUps.committed();
  await until(() => errors.length >= 2);
  expect(errors.length).toBe(2);
  await broken.close();
});

test('a send that throws at once is reported like a failed one, and wake-ups go on', async () => {
  const errors: Error[] = [];
  let calls = 0;
  const wakeUps = new RelayWakeUps(() => {
    calls += 1;
    if (calls === 1) throw new Error('thrown at once');
    return Promise.resolve();
  }, true, (e) => errors.push(e));
  wakeUps.committed();
  await until(() => errors.length >= 1);
  wakeUps.committed();
  await until(() => calls >= 2);
  expect(errors.map((e) => e.message)).toEqual(['thrown at once']);
  expect(calls).toBe(2);
});
