-- The health fold sums each (endpoint, hour)'s latency histogram and keeps each endpoint's 50
-- latest latencies in one set-wise pass over the deltas, where it called the row-by-row
-- aggregates webhook_hist_sum and webhook_recent_merge: their state functions unpacked,
-- regrouped (and, for `recent`, sorted) the whole state again for every delta row, ~0.07 ms a
-- row, so a fold of 5 s of deltas at 200 deliveries/s held a core for 120-240 ms (36 ms now).
-- Same rollups (docs/performance.md "Planning in the worker"). The two aggregates are left in
-- place, no longer used by the fold: this migration replaces one function and nothing else
-- (packages/db/test/health-fold.test.ts compares the fold with them).
CREATE OR REPLACE FUNCTION webhook_health_fold() RETURNS integer LANGUAGE plpgsql AS $$
DECLARE moved integer;
BEGIN
  IF NOT pg_try_advisory_xact_lock(hashtext('webhook_health_fold')) THEN RETURN 0; END IF;
  WITH d AS (
    DELETE FROM webhook_health_deltas RETURNING *
  ), hist AS (
    -- each (endpoint, hour)'s histogram, summed bucket by bucket; buckets that sum to 0 left out
    SELECT endpoint_id, hour, jsonb_object_agg(k, n) AS hist
      FROM (SELECT d.endpoint_id, d.hour, b.key AS k, sum(b.value::bigint) AS n
              FROM d CROSS JOIN LATERAL jsonb_each_text(COALESCE(d.hist, '{}'::jsonb)) b
             WHERE d.hour IS NOT NULL
             GROUP BY 1, 2, 3 HAVING sum(b.value::bigint) <> 0) x
     GROUP BY endpoint_id, hour
  ), hours AS (
    INSERT INTO webhook_endpoint_hours AS t (endpoint_id, hour, delivered, failed, dead, other, hist)
    SELECT g.endpoint_id, g.hour, g.delivered, g.failed, g.dead, g.other, COALESCE(h.hist, '{}'::jsonb)
      FROM (SELECT endpoint_id, hour, sum(delivered) AS delivered, sum(failed) AS failed, sum(dead) AS dead, sum(other) AS other
              FROM d WHERE hour IS NOT NULL GROUP BY endpoint_id, hour) g
      LEFT JOIN hist h ON h.endpoint_id = g.endpoint_id AND h.hour = g.hour
     ORDER BY g.endpoint_id, g.hour
    ON CONFLICT (endpoint_id, hour) DO UPDATE SET
      delivered = t.delivered + EXCLUDED.delivered, failed = t.failed + EXCLUDED.failed,
      dead = t.dead + EXCLUDED.dead, other = t.other + EXCLUDED.other,
      hist = webhook_hist_add(t.hist, EXCLUDED.hist)
    RETURNING 1
  ), recent AS (
    -- each endpoint's 50 latest [seq, latency] pairs of its deltas, oldest first
    SELECT endpoint_id, jsonb_agg(p ORDER BY (p->>0)::bigint) AS recent
      FROM (SELECT d.endpoint_id, p, row_number() OVER (PARTITION BY d.endpoint_id ORDER BY (p->>0)::bigint DESC) AS rn
              FROM d CROSS JOIN LATERAL jsonb_array_elements(COALESCE(d.recent, '[]'::jsonb)) p) x
     WHERE rn <= 50
     GROUP BY endpoint_id
  ), health AS (
    INSERT INTO webhook_endpoint_health AS t (endpoint_id, open_count, last_success_at, last_failure_at, recent)
    SELECT g.endpoint_id, g.open_count, g.last_success_at, g.last_failure_at, COALESCE(r.recent, '[]'::jsonb)
      FROM (SELECT endpoint_id, sum(open_count) AS open_count, max(last_success_at) AS last_success_at, max(last_failure_at) AS last_failure_at
              FROM d GROUP BY endpoint_id) g
      LEFT JOIN recent r ON r.endpoint_id = g.endpoint_id
     ORDER BY g.endpoint_id
    ON CONFLICT (endpoint_id) DO UPDATE SET
      open_count = t.open_count + EXCLUDED.open_count,
      last_success_at = GREATEST(t.last_success_at, EXCLUDED.last_success_at),
      last_failure_at = GREATEST(t.last_failure_at, EXCLUDED.last_failure_at),
      recent = webhook_recent_add(t.recent, EXCLUDED.recent)
    RETURNING 1
  )
  SELECT (SELECT count(*) FROM d) + 0 * (SELECT count(*) FROM hours) + 0 * (SELECT count(*) FROM health) INTO moved;
  RETURN moved;
END
$$;
