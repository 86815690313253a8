import { randomUUID } from 'node:crypto';
import { sql } from '@teamchat/db';
import { buildLedger, expectNothingLost, printLedger, settle } from './support/ledger';
import { SETTLE_MS, startStack, type Stack } from './support/stack';
import { postOnce, tenant, type PostResult } from './support/traffic';

/**
 * Fault: storms of identical posts (same body, same `Idempotency-Key`), `FAULTS_STORM_SIZE`
 * (default 200) at once, spread over two API processes, several storms at the same time.
 * Spec Limits rule 4: exactly one message per key, so exactly one set of events and exactly one
 * delivery per endpoint; every other answer is the stored one (`Idempotent-Replayed: true`).
 * The per-minute limit is off in this scenario (LIMITS_ENABLED=false): one seat firing hundreds
 * of posts would otherwise be refused 429 before its key is even looked at, and the storm
 * would test the rate limiter instead.
 */
const SIZE = Number(process.env.FAULTS_STORM_SIZE ?? 200);
const STORMS = 3;

let s: Stack;
afterAll(async () => {
  await s?.close();
});

test(`storms of ${SIZE} concurrent posts with one Idempotency-Key: one message, one set of events, one delivery per endpoint`, async () => {
  s = await startStack('storm', { limits: false });
  const t = await tenant(s, { seats: STORMS, endpoints: [{ path: '/a' }, { path: '/b' }] });
  await s.startApi();
  await s.startApi();
  await s.startWorker();
  await s.startWorker();

  const started = Date.now();
  const storms = await Promise.all(Array.from({ length: STORMS }, async (_, seat) => {
    const key = randomUUID();
    const ref = `f-storm-${seat}-${key}`;
    const text = `storm ${seat} for <@${t.seats[(seat + 1) % STORMS].identityId}>`;
    return Promise.all(Array.from({ length: SIZE }, (_x, i) => postOnce(s, t, seat, { api: i % 2, ref, idempotencyKey: key, text })));
  }));
  const stormMs = Date.now() - started;
  // The ledger counts each storm once (one client_ref per storm): all of a storm's answers must agree.
  const posts: PostResult[] = storms.map((answers) => answers[0]);

  const settled = await settle(s, t, ['/a', '/b'], SETTLE_MS);
  await new Promise((r) => setTimeout(r, 2000)); // a duplicate delivery would show up by now
  const ledger = await buildLedger(s, `Idempotency-Key storms (${STORMS} x ${SIZE} concurrent)`, t, posts, ['/a', '/b']);
  const statuses: Record<string, number> = {};
  for (const a of storms.flat()) statuses[`${a.status}${a.code ? ` ${a.code}` : ''}`] = (statuses[`${a.status}${a.code ? ` ${a.code}` : ''}`] ?? 0) + 1;
  const firsts = storms.map((answers) => answers.filter((a) => !a.replayed).length);
  printLedger(ledger, [
    `answers ${JSON.stringify(statuses)} | not replayed per storm ${JSON.stringify(firsts)} | distinct ts per storm ${JSON.stringify(storms.map((a) => new Set(a.map((x) => x.ts)).size))} | storms took ${(stormMs / 1000).toFixed(1)} s`,
  ]);

  expect(settled).toBe(true);
  expectNothingLost(ledger);
  for (const answers of storms) {
    expect(answers.every((a) => a.status === 201)).toBe(true);
    expect(new Set(answers.map((a) => a.ts)).size).toBe(1); // every answer names the same message
    expect(answers.filter((a) => !a.replayed)).toHaveLength(1); // created once, replayed SIZE - 1 times
  }
  // Exactly one message per key, exactly its two events, exactly one delivery row per endpoint and event.
  expect(ledger.messages).toBe(STORMS);
  expect(ledger.events).toBe(STORMS * 2);
  const rows = (await s.h.deps.database.db.execute<{ n: number }>(sql`
    SELECT count(*)::int AS n FROM webhook_deliveries WHERE account_id = ${t.accountId}`)).rows[0].n;
  expect(rows).toBe(STORMS * 2 * 2);
  for (const e of ledger.endpoints) {
    expect(e.requests).toBe(STORMS * 2);
    expect(e.duplicates).toBe(0);
  }
});
