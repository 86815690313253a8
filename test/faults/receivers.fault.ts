import { sql } from '@teamchat/db';
import { endpointRow } from '../support/webhooks';
import { buildLedger, eventsOfTenant, expectNothingLost, printLedger, settle } from './support/ledger';
import type { Behaviour } from './support/receiver';
import { SETTLE_MS, TIMEOUT_MS, sleep, startStack, type Stack } from './support/stack';
import { startLoad, tenant, type Load, type Tenant } from './support/traffic';

/**
 * Faults at the receivers, one account each (so one account's in-flight cap never hides
 * another's), each with a healthy control endpoint beside the faulty one:
 * - hang: no answer at all for a while (past WEBHOOK_TIMEOUT_MS), then 200;
 * - reset: the TCP connection reset for a while, then 200;
 * - flaky: 500 for a while, then 200;
 * - slow: every answer after 2.5 s (inside the timeout) → disabled `slow` once 50 attempts
 *   have a median above 2 s;
 * - gone: 410 → disabled `gone`.
 * The recovered receivers and every control must get every event; the disabled ones must leave
 * no delivery open (their open deliveries are dropped as `dead`), and the delivery log must
 * say what happened (failed attempts with the timeout, the reset, the 500; delivered after).
 * The workers run with the suite's compressed retry schedule and short timeout.
 */
const FAULT_MS = Number(process.env.FAULTS_RECEIVER_FAULT_MS ?? 8000);
const SLOW_DELAY_MS = 2500;

let s: Stack;
afterAll(async () => {
  await s?.close();
});

interface Case { name: string; faulty: string; control: string; t: Tenant; load: Load }

async function logRows(endpointId: string) {
  return (await s.h.deps.database.db.execute<{ status: string; response_status: number | null; error: string | null; attempt: number; event_id: string; latency_ms: number | null }>(sql`
    SELECT status, response_status, error, attempt, event_id, latency_ms FROM webhook_deliveries WHERE endpoint_id = ${endpointId} ORDER BY seq`)).rows;
}

test('receivers that hang, reset, answer 500 for a while, answer slowly or answer 410', async () => {
  expect(SLOW_DELAY_MS).toBeLessThan(TIMEOUT_MS); // a slow answer must be an answer, not a timeout
  s = await startStack('receivers');
  const behaviours: Record<string, Behaviour> = {
    hang: { hang: true },
    reset: { reset: true },
    flaky: { status: 500 },
    slow: { status: 200, delayMs: SLOW_DELAY_MS },
    gone: { status: 410 },
  };
  const cases: Case[] = [];
  for (const [name, behaviour] of Object.entries(behaviours)) {
    const faulty = `/${name}`;
    const control = `/${name}-ok`;
    const t = await tenant(s, { seats: 2, endpoints: [{ path: faulty, behaviour }, { path: control }] });
    cases.push({ name, faulty, control, t, load: null as unknown as Load });
  }
  await s.startApi();
  await s.startWorker();
  await s.startWorker();
  for (const c of cases) c.load = startLoad(s, c.t);
  const started = Date.now();

  // The passing faults pass: after FAULT_MS those receivers answer 200 again.
  await sleep(FAULT_MS);
  for (const name of ['hang', 'reset', 'flaky']) s.rx.behave(`/${name}`, { status: 200 });
  const recoveredAt = Date.now();

  // Keep posting until `slow` and `gone` have been disabled (slow needs 50 attempts).
  const disabled = async (c: Case) => (await endpointRow(s.h, c.t.endpoints.get(c.faulty)!)).enabled === false;
  const slow = cases.find((c) => c.name === 'slow')!;
  const gone = cases.find((c) => c.name === 'gone')!;
  const deadline = Date.now() + SETTLE_MS;
  while (!((await disabled(slow)) && (await disabled(gone))) && Date.now() < deadline) await sleep(500);
  await sleep(2000); // a few events after the disabling, which must not be sent
  const posts = await Promise.all(cases.map((c) => c.load.stop()));

  const failures: string[] = [];
  for (const [i, c] of cases.entries()) {
    const recovering = ['hang', 'reset', 'flaky'].includes(c.name);
    const complete = recovering ? [c.faulty, c.control] : [c.control];
    const settled = await settle(s, c.t, complete, SETTLE_MS);
    const ledger = await buildLedger(s, `receiver ${c.name}`, c.t, posts[i], complete);
    const ep = await endpointRow(s.h, c.t.endpoints.get(c.faulty)!);
    const rows = await logRows(c.t.endpoints.get(c.faulty)!);
    const errors = [...new Set(rows.filter((r) => r.status === 'failed' || r.status === 'dead').map((r) => r.response_status ?? r.error))].slice(0, 3);
    printLedger(ledger, [
      `endpoint ${c.faulty}: enabled ${ep.enabled}${ep.disabledReason ? ` (${ep.disabledReason})` : ''} | settled ${settled} | failed attempts say ${JSON.stringify(errors)}`,
    ]);
    try {
      expect(settled).toBe(true);
      expectNothingLost(ledger);
      expect(ledger.answered2xx).toBe(ledger.posts);
      // What the delivery log says: every delivered row was received and answered 2xx (the log does not lie).
      const accepted = s.rx.log(c.faulty).accepted;
      expect(rows.filter((r) => r.status === 'delivered' && !accepted.has(r.event_id))).toEqual([]);
      if (recovering) {
        expect(ep.enabled).toBe(true);
        const failed = rows.filter((r) => r.status === 'failed');
        expect(failed.length).toBeGreaterThan(0);
        if (c.name === 'flaky') expect(failed.every((r) => r.response_status === 500)).toBe(true);
        if (c.name === 'hang') expect(failed.every((r) => r.response_status === null && /timeout/.test(r.error ?? ''))).toBe(true);
        if (c.name === 'reset') expect(failed.every((r) => r.response_status === null && r.error && !/timeout/.test(r.error))).toBe(true);
        // A failed attempt is always followed by a retry: each event's chain ends delivered.
        expect(rows.filter((r) => r.status === 'dead')).toEqual([]);
      } else {
        expect(ep).toMatchObject({ enabled: false, disabledReason: c.name });
        expect(rows.filter((r) => r.status === 'pending' || r.status === 'retrying')).toEqual([]);
        if (c.name === 'gone') {
          expect(rows.filter((r) => r.status === 'delivered')).toEqual([]);
          expect(rows.some((r) => r.status === 'dead' && r.response_status === 410)).toBe(true);
        } else {
          // `slow` judges the last 50 attempts that got an answer or timed out: at least 50, median above 2 s.
          const timed = rows.filter((r) => r.latency_ms !== null).map((r) => r.latency_ms!);
          expect(timed.length).toBeGreaterThanOrEqual(50);
          expect(timed.sort((x, y) => x - y)[Math.floor(timed.length / 2)]).toBeGreaterThan(2000);
          expect(rows.filter((r) => r.status === 'delivered').length).toBeGreaterThan(0);
        }
        // After the disabling no event is fanned out to it; the control got them all.
        const evs = await eventsOfTenant(s, c.t);
        expect(new Set(rows.map((r) => r.event_id)).size).toBeLessThan(evs.length);
      }
    } catch (err) {
      failures.push(`${c.name}: ${(err as Error).message}`);
    }
  }
  process.stdout.write(`receivers: faults for ${FAULT_MS / 1000} s, recovered ${((recoveredAt - started) / 1000).toFixed(1)} s in\n`);
  expect(failures).toEqual([]);
});
