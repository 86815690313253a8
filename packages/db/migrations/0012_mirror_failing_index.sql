-- mirrors_failing_idx, the index of the maintenance's `failing` check of mirrors (the enabled
-- mirrors in a failure streak, oldest streak first), is built CONCURRENTLY by the online step
-- `0012_mirror_failing_index:mirrors_failing_idx` that runs after drizzle's migrations
-- (packages/db/src/online.ts; docs/operations.md "Migrations"), as 0010's index of endpoints:
-- built here, it would hold the mirrors table's writes for the length of a build. This
-- migration changes nothing itself.
SELECT 1;
