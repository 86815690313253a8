-- The health rollups' UPDATE trigger returns at once when no row's tracked columns changed
-- (endpoint, seq, status, attempted_at, latency_ms): the claims, the claim give-backs and other
-- bookkeeping updates of the delivery log, whose deltas all cancel and were filtered out at the
-- end anyway. Same deltas, a third less per one-row claim
-- (docs/performance.md "What partitioning and the rollups cost the delivery pipeline").
CREATE OR REPLACE FUNCTION webhook_health_after_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- Nothing tracked changed (a claim, a give-back): every delta below would cancel. The rows'
  -- tracked values before and after are the same multiset (seq names the row) exactly when no
  -- row's changed. A set operation, not a join: the transition tables have no statistics, and an
  -- EXISTS over their join was planned as a nested loop, quadratic in the rows of the statement.
  IF NOT EXISTS (SELECT endpoint_id, seq, status, attempted_at, latency_ms FROM n
                 EXCEPT ALL
                 SELECT endpoint_id, seq, status, attempted_at, latency_ms FROM o) THEN
    RETURN NULL;
  END IF;
  INSERT INTO webhook_health_deltas (endpoint_id, hour, delivered, failed, dead, other, open_count, last_success_at, last_failure_at, hist, recent)
  WITH k0 AS (
    SELECT x.endpoint_id, x.seq, x.status, x.attempted_at, x.latency_ms, x.sign, x.attempted_at IS NOT NULL AS att,
           CASE WHEN x.attempted_at IS NOT NULL THEN date_trunc('hour', x.attempted_at, 'UTC') END AS att_hour,
           x.fresh
      FROM (
        SELECT nn.endpoint_id, nn.seq, nn.status, nn.attempted_at, nn.latency_ms, 1 AS sign,
               nn.attempted_at IS NOT NULL AND nn.latency_ms IS NOT NULL
               AND (oo.attempted_at IS NULL OR oo.latency_ms IS NULL) AS fresh
          FROM n nn JOIN o oo ON oo.id = nn.id
        UNION ALL
        SELECT endpoint_id, seq, status, attempted_at, latency_ms, -1, false FROM o
      ) x
  ), k AS (
    SELECT *, COALESCE(att_hour, max(att_hour) OVER (PARTITION BY endpoint_id)) AS hour FROM k0
  ), g AS (
    SELECT endpoint_id, hour,
           COALESCE(sum(sign) FILTER (WHERE att AND status = 'delivered'), 0)::int AS delivered,
           COALESCE(sum(sign) FILTER (WHERE att AND status IN ('failed', 'retrying')), 0)::int AS failed,
           COALESCE(sum(sign) FILTER (WHERE att AND status = 'dead'), 0)::int AS dead,
           COALESCE(sum(sign) FILTER (WHERE att AND status NOT IN ('delivered', 'failed', 'retrying', 'dead')), 0)::int AS other,
           COALESCE(sum(sign) FILTER (WHERE status IN ('pending', 'retrying')), 0)::int AS open_count,
           max(attempted_at) FILTER (WHERE sign > 0 AND status = 'delivered') AS last_success_at,
           max(attempted_at) FILTER (WHERE sign > 0 AND status IN ('failed', 'retrying', 'dead')) AS last_failure_at,
           COALESCE(jsonb_agg(jsonb_build_array(seq, latency_ms) ORDER BY seq) FILTER (WHERE fresh AND sign > 0), '[]'::jsonb) AS recent
      FROM k GROUP BY endpoint_id, hour
  ), h AS (
    SELECT endpoint_id, hour, jsonb_object_agg(b, c) AS hist
      FROM (SELECT endpoint_id, hour, webhook_latency_bucket(latency_ms)::text AS b, sum(sign) AS c
              FROM k WHERE att AND latency_ms IS NOT NULL
             GROUP BY 1, 2, 3 HAVING sum(sign) <> 0) x
     GROUP BY endpoint_id, hour
  )
  SELECT g.endpoint_id, g.hour, g.delivered, g.failed, g.dead, g.other, g.open_count, g.last_success_at, g.last_failure_at,
         COALESCE(h.hist, '{}'::jsonb), g.recent
    FROM g LEFT JOIN h ON h.endpoint_id = g.endpoint_id AND h.hour = g.hour
   WHERE g.delivered <> 0 OR g.failed <> 0 OR g.dead <> 0 OR g.other <> 0 OR g.open_count <> 0
      OR h.hist IS NOT NULL OR g.recent <> '[]'::jsonb;
  RETURN NULL;
END
$$;
