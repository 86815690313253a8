/**
 * The health fold (docs/webhooks.md "Health and stats rollups"): the deltas folded into the
 * hourly and per-endpoint rollups give what the row-by-row aggregates of migration 0006 gave
 * (webhook_hist_sum, webhook_recent_merge), which migration 0009's set-wise fold replaced:
 * histograms summed bucket by bucket with zero buckets left out, and each endpoint's 50 latest
 * latencies, oldest first, over what was folded before too.
 */
import { Client } from 'pg';
import { createMigratedDatabase, dropDatabase } from '../../../test/support/databases';

let db: { name: string; url: string };
let client: Client;
beforeAll(async () => {
  db = await createMigratedDatabase('teamchat_health_fold');
  client = new Client({ connectionString: db.url });
  await client.connect();
});
afterAll(async () => {
  await client.end();
  await dropDatabase(db.name);
});

test('folded rollups equal the row-by-row aggregates over the same deltas, across two folds', async () => {
  const hour = new Date(Math.floor(Date.now() / 3600_000) * 3600_000);
  const deltas: Array<{ ep: string; hour: Date | null; hist: Record<string, number>; recent: Array<[number, number]> }> = [];
  let seq = 0;
  let seed = 11;
  const rand = (n: number) => Math.floor(((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31) * n);
  for (let i = 0; i < 600; i++) {
    const hist: Record<string, number> = {};
    for (let j = rand(4); j > 0; j--) hist[String(rand(12))] = rand(5) - 2;
    deltas.push({
      ep: `ep_${rand(5)}`,
      hour: rand(6) === 0 ? null : new Date(hour.getTime() - rand(3) * 3600_000),
      hist,
      recent: Array.from({ length: rand(4) }, () => [(seq += 1), rand(900)] as [number, number]),
    });
  }
  const insert = (rows: typeof deltas) => client.query(
    `INSERT INTO webhook_health_deltas (endpoint_id, hour, delivered, hist, recent)
     SELECT * FROM unnest($1::text[], $2::timestamptz[], $3::int[], $4::jsonb[], $5::jsonb[])`,
    [rows.map((d) => d.ep), rows.map((d) => d.hour), rows.map(() => 1), rows.map((d) => JSON.stringify(d.hist)), rows.map((d) => JSON.stringify(d.recent))],
  );
  // What the aggregates give over all of them, computed before any fold.
  await insert(deltas);
  const expectedHours = (await client.query(`SELECT endpoint_id, hour, count(*)::int AS delivered, webhook_hist_sum(hist) AS hist FROM webhook_health_deltas WHERE hour IS NOT NULL GROUP BY 1, 2 ORDER BY 1, 2`)).rows;
  const expectedRecent = (await client.query(`SELECT endpoint_id, webhook_recent_merge(recent) AS recent FROM webhook_health_deltas GROUP BY 1 ORDER BY 1`)).rows;
  await client.query('DELETE FROM webhook_health_deltas');
  // Folded in two passes: the second adds to what the first wrote.
  await insert(deltas.slice(0, 250));
  expect((await client.query('SELECT webhook_health_fold() AS n')).rows[0].n).toBe(250);
  await insert(deltas.slice(250));
  expect((await client.query('SELECT webhook_health_fold() AS n')).rows[0].n).toBe(350);
  const hours = (await client.query(`SELECT endpoint_id, hour, delivered, hist FROM webhook_endpoint_hours ORDER BY 1, 2`)).rows;
  const health = (await client.query(`SELECT endpoint_id, recent FROM webhook_endpoint_health ORDER BY 1`)).rows;
  expect(hours).toEqual(expectedHours);
  expect(health).toEqual(expectedRecent);
  expect(health.every((h) => h.recent.length <= 50)).toBe(true);
  expect(health.some((h) => h.recent.length === 50)).toBe(true);
  expect(hours.some((h) => Object.keys(h.hist).length > 0)).toBe(true);
});
