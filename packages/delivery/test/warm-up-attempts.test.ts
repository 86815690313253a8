import { warmUpAttempts } from '../src/warm-up-attempts';
import { createMigratedDatabase, dropDatabase } from '../../../test/support/databases';
import type { Harness } from '../../../test/support/harness';
import { startWebhookHarness } from '../../../test/support/webhooks';

/**
 * The worker's warm-up attempts (warm-up-attempts.ts, docs/operations.md "Readiness"): the
 * per-delivery stages run on rows held in memory against the warm-up's own receiver; nothing
 * reaches PostgreSQL's tables, no attempt is counted, and the URL the rows carry is never called.
 * A database of its own, so whole tables can be counted.
 */
let db: { name: string; url: string };
beforeAll(async () => {
  db = await createMigratedDatabase('teamchat_whwarm');
});
afterAll(async () => {
  await dropDatabase(db.name);
});

async function counts(h: Harness) {
  const q = async (sql: string) => Number((await h.deps.database.pool.query<{ n: string }>(sql)).rows[0].n);
  return { deliveries: await q('SELECT count(*) AS n FROM webhook_deliveries'), bodies: await q('SELECT count(*) AS n FROM webhook_bodies'), events: await q('SELECT count(*) AS n FROM events') };
}

const attemptsCounted = async (h: Harness) => (await h.deps.metrics.deliveriesTotal.get()).values.reduce((s, v) => s + v.value, 0);

// As in production, no host is exempt from the guard (it refuses the rows' localhost URL); and
// with localhost exempt (development), the attempts still go to the warm-up's receiver only: a
// send to https://localhost/ (nothing listens on 443 here) would get no answer and fail the step.
test.each([[[] as string[]], [['localhost']]])('allowed hosts %j: every attempt answered by the warm-up receiver, no row written, no attempt counted', async (allowed) => {
  const h = await startWebhookHarness({ databaseUrl: db.url, webhookAllowedHosts: allowed });
  try {
    const before = await counts(h);
    const counted = await attemptsCounted(h);
    expect(await warmUpAttempts(h.deps, 40)).toBe(40);
    expect(await counts(h)).toEqual(before);
    expect(await attemptsCounted(h)).toBe(counted);
  } finally {
    await h.close();
  }
});
