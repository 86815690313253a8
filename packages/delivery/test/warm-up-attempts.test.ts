import { warmUpAttempts } from '../src/warm-up-attempts';
import type { Harness } from '../../../test/support/harness';
import { startWebhookHarness } from '../../../test/support/webhooks';

/**
 * The worker's warm-up attempts (warm-up-attempts.ts, docs/operations.md "Readiness"): the
 * per-delivery stages run on rows held in memory against the warm-up's own receiver; nothing
 * reaches PostgreSQL's tables, no attempt is counted, and the URL the rows carry is never called.
 */
let h: Harness;
beforeAll(async () => {
  // localhost allowed, so the guard vets the rows' URL: the attempts must still go to the warm-up's receiver only.
  h = await startWebhookHarness({ webhookAllowedHosts: ['localhost'] });
});
afterAll(async () => {
  await h.close();
});

async function counts() {
  const q = async (sql: string) => Number((await h.deps.database.pool.query<{ n: string }>(sql)).rows[0].n);
  return {
    deliveries: await q('SELECT count(*) AS n FROM webhook_deliveries'),
    bodies: await q('SELECT count(*) AS n FROM webhook_bodies'),
    events: await q('SELECT count(*) AS n FROM events'),
  };
}

test('runs its attempts end to end, writes no row and counts no attempt', async () => {
  const before = await counts();
  const attemptsBefore = (await h.deps.metrics.deliveriesTotal.get()).values.reduce((s, v) => s + v.value, 0);
  const answered = await warmUpAttempts(h.deps, 40);
  expect(answered).toBe(40);
  expect(await counts()).toEqual(before);
  expect((await h.deps.metrics.deliveriesTotal.get()).values.reduce((s, v) => s + v.value, 0)).toBe(attemptsBefore);
});
