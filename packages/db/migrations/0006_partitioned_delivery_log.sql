-- The delivery log at volume (docs/webhooks.md "Retention" and "Health and stats rollups";
-- docs/performance.md "The delivery log at volume"):
-- 1. rollup tables and the functions that keep them;
-- 2. webhook_deliveries converted to a table partitioned by week of created_at, data kept;
-- 3. the log's filter indexes; statement triggers that append each change's effect to the deltas.
CREATE TABLE "webhook_endpoint_health" (
	"endpoint_id" text PRIMARY KEY NOT NULL,
	"open_count" integer DEFAULT 0 NOT NULL,
	"last_success_at" timestamp with time zone,
	"last_failure_at" timestamp with time zone,
	"recent" jsonb DEFAULT '[]'::jsonb NOT NULL
);
--> statement-breakpoint
CREATE TABLE "webhook_endpoint_hours" (
	"endpoint_id" text NOT NULL,
	"hour" timestamp with time zone NOT NULL,
	"delivered" integer DEFAULT 0 NOT NULL,
	"failed" integer DEFAULT 0 NOT NULL,
	"dead" integer DEFAULT 0 NOT NULL,
	"other" integer DEFAULT 0 NOT NULL,
	"hist" jsonb DEFAULT '{}'::jsonb NOT NULL,
	CONSTRAINT "webhook_endpoint_hours_endpoint_id_hour_pk" PRIMARY KEY("endpoint_id","hour")
);
--> statement-breakpoint
CREATE TABLE "webhook_health_deltas" (
	"endpoint_id" text NOT NULL,
	"hour" timestamp with time zone,
	"delivered" integer DEFAULT 0 NOT NULL,
	"failed" integer DEFAULT 0 NOT NULL,
	"dead" integer DEFAULT 0 NOT NULL,
	"other" integer DEFAULT 0 NOT NULL,
	"open_count" integer DEFAULT 0 NOT NULL,
	"last_success_at" timestamp with time zone,
	"last_failure_at" timestamp with time zone,
	"hist" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"recent" jsonb DEFAULT '[]'::jsonb NOT NULL
);
--> statement-breakpoint
CREATE INDEX "webhook_health_deltas_endpoint_idx" ON "webhook_health_deltas" USING btree ("endpoint_id");
--> statement-breakpoint
-- Latency histogram bucket: 0 below 1 ms, else 1 + floor(log base 1.1 of ms): buckets 10 % wide.
CREATE FUNCTION webhook_latency_bucket(ms integer) RETURNS integer LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE WHEN ms < 1 THEN 0 ELSE 1 + floor(ln(ms::float8) / ln(1.1::float8))::int END
$$;
--> statement-breakpoint
-- Sum of two histograms ({bucket: count}); buckets that sum to 0 are left out.
CREATE FUNCTION webhook_hist_add(a jsonb, b jsonb) RETURNS jsonb LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT COALESCE(jsonb_object_agg(k, n) FILTER (WHERE n <> 0), '{}'::jsonb)
    FROM (SELECT k, sum(v::bigint) AS n
            FROM (SELECT * FROM jsonb_each_text(COALESCE(a, '{}'::jsonb))
                  UNION ALL SELECT * FROM jsonb_each_text(COALESCE(b, '{}'::jsonb))) x(k, v)
           GROUP BY k) y
$$;
--> statement-breakpoint
CREATE AGGREGATE webhook_hist_sum(jsonb) (SFUNC = webhook_hist_add, STYPE = jsonb, INITCOND = '{}');
--> statement-breakpoint
-- The last 50 latencies of two lists of [seq, ms], by seq (the health median's window).
CREATE FUNCTION webhook_recent_add(a jsonb, b jsonb) RETURNS jsonb LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT COALESCE(jsonb_agg(p ORDER BY (p->>0)::bigint), '[]'::jsonb)
    FROM (SELECT p FROM (SELECT jsonb_array_elements(COALESCE(a, '[]'::jsonb))
                         UNION ALL SELECT jsonb_array_elements(COALESCE(b, '[]'::jsonb))) x(p)
           ORDER BY (p->>0)::bigint DESC LIMIT 50) y
$$;
--> statement-breakpoint
CREATE AGGREGATE webhook_recent_merge(jsonb) (SFUNC = webhook_recent_add, STYPE = jsonb, INITCOND = '[]');
--> statement-breakpoint
-- Folds the deltas into the rollups (the maintenance pass; one folder at a time). Keys are
-- written in order so two folds could never deadlock even without the lock.
CREATE FUNCTION webhook_health_fold() RETURNS integer LANGUAGE plpgsql AS $$
DECLARE moved integer;
BEGIN
  IF NOT pg_try_advisory_xact_lock(hashtext('webhook_health_fold')) THEN RETURN 0; END IF;
  WITH d AS (
    DELETE FROM webhook_health_deltas RETURNING *
  ), hours AS (
    INSERT INTO webhook_endpoint_hours AS t (endpoint_id, hour, delivered, failed, dead, other, hist)
    SELECT endpoint_id, hour, sum(delivered), sum(failed), sum(dead), sum(other), webhook_hist_sum(hist)
      FROM d WHERE hour IS NOT NULL
     GROUP BY endpoint_id, hour ORDER BY endpoint_id, hour
    ON CONFLICT (endpoint_id, hour) DO UPDATE SET
      delivered = t.delivered + EXCLUDED.delivered, failed = t.failed + EXCLUDED.failed,
      dead = t.dead + EXCLUDED.dead, other = t.other + EXCLUDED.other,
      hist = webhook_hist_add(t.hist, EXCLUDED.hist)
    RETURNING 1
  ), health AS (
    INSERT INTO webhook_endpoint_health AS t (endpoint_id, open_count, last_success_at, last_failure_at, recent)
    SELECT endpoint_id, sum(open_count), max(last_success_at), max(last_failure_at), webhook_recent_merge(recent)
      FROM d GROUP BY endpoint_id ORDER BY endpoint_id
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
--> statement-breakpoint
-- What a set of log rows adds (sign 1) or takes away (sign -1), per endpoint and hour of attempt.
-- An attempt is a row with attempted_at: delivered; failed (failed or retrying); dead; other.
-- open_count counts pending and retrying rows; `recent` lists the latencies newly recorded.
CREATE FUNCTION webhook_health_after_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO webhook_health_deltas (endpoint_id, hour, delivered, failed, dead, other, open_count, last_success_at, last_failure_at, hist, recent)
  WITH k0 AS (
    SELECT endpoint_id, seq, status, attempted_at, latency_ms, 1 AS sign, attempted_at IS NOT NULL AS att,
           CASE WHEN attempted_at IS NOT NULL THEN date_trunc('hour', attempted_at, 'UTC') END AS att_hour,
           attempted_at IS NOT NULL AND latency_ms IS NOT NULL AS fresh
      FROM n
  ), k AS (
    -- a change to open rows only rides on the endpoint's latest hour of this statement: one delta row per endpoint and hour
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
      OR g.last_success_at IS NOT NULL OR g.last_failure_at IS NOT NULL OR h.hist IS NOT NULL OR g.recent <> '[]'::jsonb;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE FUNCTION webhook_health_after_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
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
--> statement-breakpoint
-- Weekly partitions (Monday 00:00 UTC) from the week of `from_ts` to `ahead` weeks after the
-- current one; existing ones are left alone. Called by this migration and by the maintenance pass.
CREATE FUNCTION webhook_deliveries_ensure_partitions(from_ts timestamptz, ahead integer) RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
  w timestamptz := date_trunc('week', from_ts, 'UTC');
  last_w timestamptz := date_trunc('week', now(), 'UTC') + make_interval(weeks => ahead);
  name text;
  made integer := 0;
BEGIN
  WHILE w <= last_w LOOP
    name := 'webhook_deliveries_w' || to_char(w AT TIME ZONE 'UTC', 'YYYYMMDD');
    IF to_regclass(name) IS NULL THEN
      EXECUTE format('CREATE TABLE %I PARTITION OF webhook_deliveries FOR VALUES FROM (%L) TO (%L)', name, w, w + interval '1 week');
      made := made + 1;
    END IF;
    w := w + interval '1 week';
  END LOOP;
  RETURN made;
END
$$;
--> statement-breakpoint
-- The conversion: the old table's rows are copied into the partitioned one (the copy's insert
-- trigger seeds the rollups), then the old table is dropped. Its lock lasts the whole copy
-- (docs/performance.md "What migration 0006 costs").
DROP INDEX "webhook_deliveries_endpoint_seq_idx";
--> statement-breakpoint
DROP INDEX "webhook_deliveries_open_idx";
--> statement-breakpoint
DROP INDEX "webhook_deliveries_created_brin";
--> statement-breakpoint
ALTER TABLE "webhook_deliveries" RENAME TO "webhook_deliveries_unpartitioned";
--> statement-breakpoint
ALTER TABLE "webhook_deliveries_unpartitioned" RENAME CONSTRAINT "webhook_deliveries_pkey" TO "webhook_deliveries_unpartitioned_pkey";
--> statement-breakpoint
CREATE TABLE "webhook_deliveries" (LIKE "webhook_deliveries_unpartitioned" INCLUDING DEFAULTS) PARTITION BY RANGE ("created_at");
--> statement-breakpoint
ALTER SEQUENCE "webhook_deliveries_seq_seq" OWNED BY "webhook_deliveries"."seq";
--> statement-breakpoint
ALTER TABLE "webhook_deliveries" ADD CONSTRAINT "webhook_deliveries_pkey" PRIMARY KEY("id","created_at");
--> statement-breakpoint
ALTER TABLE "webhook_deliveries" ADD CONSTRAINT "webhook_deliveries_body_id_webhook_bodies_id_fk" FOREIGN KEY ("body_id") REFERENCES "public"."webhook_bodies"("id") ON DELETE no action ON UPDATE no action;
--> statement-breakpoint
CREATE INDEX "webhook_deliveries_endpoint_seq_idx" ON "webhook_deliveries" USING btree ("endpoint_id","seq");
--> statement-breakpoint
CREATE INDEX "webhook_deliveries_open_idx" ON "webhook_deliveries" USING btree ("status","next_retry_at") WHERE status IN ('pending', 'retrying');
--> statement-breakpoint
CREATE INDEX "webhook_deliveries_endpoint_status_seq_idx" ON "webhook_deliveries" USING btree ("endpoint_id","status","seq");
--> statement-breakpoint
CREATE INDEX "webhook_deliveries_endpoint_type_seq_idx" ON "webhook_deliveries" USING btree ("endpoint_id","event_type","seq");
--> statement-breakpoint
CREATE INDEX "webhook_deliveries_body_idx" ON "webhook_deliveries" USING btree ("body_id");
--> statement-breakpoint
-- Rows outside every weekly partition (a clock far off, partitions not yet made) land here
-- rather than failing the write; retention purges it by rows.
CREATE TABLE "webhook_deliveries_default" PARTITION OF "webhook_deliveries" DEFAULT;
--> statement-breakpoint
SELECT webhook_deliveries_ensure_partitions(
  LEAST(now() - interval '35 days', (SELECT min(created_at) FROM webhook_deliveries_unpartitioned)), 4);
--> statement-breakpoint
CREATE TRIGGER webhook_health_insert AFTER INSERT ON "webhook_deliveries"
  REFERENCING NEW TABLE AS n FOR EACH STATEMENT EXECUTE FUNCTION webhook_health_after_insert();
--> statement-breakpoint
CREATE TRIGGER webhook_health_update AFTER UPDATE ON "webhook_deliveries"
  REFERENCING OLD TABLE AS o NEW TABLE AS n FOR EACH STATEMENT EXECUTE FUNCTION webhook_health_after_update();
--> statement-breakpoint
INSERT INTO "webhook_deliveries" SELECT * FROM "webhook_deliveries_unpartitioned";
--> statement-breakpoint
DROP TABLE "webhook_deliveries_unpartitioned";
--> statement-breakpoint
SELECT webhook_health_fold();
