import { PURGE_EVERY_MS, PURGE_FIRST_AFTER_MS, WebhookQueues, maintenanceScheduleFrom, webhookMaintenance } from '../src';
import { createMigratedDatabase, dropDatabase } from '../../../test/support/databases';
import type { Harness } from '../../../test/support/harness';
import { expiredLogWeeks, makeExpiredLogWeek, startWebhookHarness } from '../../../test/support/webhooks';

/**
 * The maintenance's purge schedule (maintenance.ts): a started engine's first full purge runs
 * PURGE_FIRST_AFTER_MS after its start, never in the passes of its first seconds (they carry a
 * restarted worker's backlog and the first posts), then every PURGE_EVERY_MS. A database of its
 * own: the purge detaches the log's weeks past the 30 days, which other tests may be writing into.
 */
let db: { name: string; url: string };
let h: Harness;
let queues: WebhookQueues;
beforeAll(async () => {
  db = await createMigratedDatabase('teamchat_whpurge');
  h = await startWebhookHarness({ databaseUrl: db.url });
  queues = new WebhookQueues(h.deps);
});
afterAll(async () => {
  await queues.close();
  await h.close();
  await dropDatabase(db.name);
});

const expiredWeeks = () => expiredLogWeeks(h.deps.database.db);

/** No account's rows are looked at (the sweep's part of the pass is narrowed to none). */
const NO_ACCOUNT = ['acct_none'];

test('the first purge waits its minute after the start; once due it runs, and the next one is an hour later', async () => {
  const startedAt = Date.now();
  const schedule = maintenanceScheduleFrom(startedAt);
  expect(schedule.nextPurgeAt).toBe(startedAt + PURGE_FIRST_AFTER_MS);
  await makeExpiredLogWeek(h.deps.database.db);
  expect((await expiredWeeks()).length).toBeGreaterThan(0);

  // The passes of the first seconds purge nothing and leave the schedule as it is.
  for (let i = 0; i < 3; i += 1) expect((await webhookMaintenance(h.deps, queues, schedule, NO_ACCOUNT)).purged).toBe(0);
  expect(schedule.nextPurgeAt).toBe(startedAt + PURGE_FIRST_AFTER_MS);
  expect((await expiredWeeks()).length).toBeGreaterThan(0);

  // Once due, the pass purges: the expired weeks are gone, and the next purge is an hour on.
  schedule.nextPurgeAt = Date.now() - 1;
  const passAt = Date.now();
  await webhookMaintenance(h.deps, queues, schedule, NO_ACCOUNT);
  expect(await expiredWeeks()).toEqual([]);
  expect(schedule.nextPurgeAt).toBeGreaterThanOrEqual(passAt + PURGE_EVERY_MS);
});
