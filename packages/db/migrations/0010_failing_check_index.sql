-- webhook_endpoints_failing_idx, the index of the maintenance's `failing` check (the enabled
-- endpoints in a failure streak, oldest streak first), is built CONCURRENTLY by the online step
-- `0010_failing_check_index:webhook_endpoints_failing_idx` that runs after drizzle's migrations
-- (packages/db/src/online.ts; docs/operations.md "Migrations"): built here, it would hold the
-- endpoints table's writes for the length of a build. This migration changes nothing itself.
SELECT 1;
