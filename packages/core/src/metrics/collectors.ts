import type { Queue } from 'bullmq';
import type { Pool } from 'pg';
import { withTimeout } from '../ops/timeout';

/** A scrape must answer quickly even when PostgreSQL or Redis does not: each read gives up after this. */
export const COLLECT_TIMEOUT_MS = 2000;
/** The backlog count stops here, so a huge backlog never makes the scrape slow. */
export const OUTBOX_COUNT_CAP = 100_000;

export const QUEUE_STATES = ['waiting', 'delayed', 'active', 'failed'] as const;

/**
 * Unrelayed event rows and the age of the oldest, both on the partial index
 * `events_unrelayed_idx` (seq WHERE relayed_at IS NULL): the oldest is the lowest seq.
 */
export async function readOutboxBacklog(pool: Pool): Promise<{ events: number; oldestAgeSeconds: number }> {
  const { rows } = await withTimeout(
    pool.query<{ events: string; age: number | null }>(
      `SELECT
         (SELECT count(*) FROM (SELECT 1 FROM events WHERE relayed_at IS NULL LIMIT ${OUTBOX_COUNT_CAP}) capped) AS events,
         (SELECT EXTRACT(EPOCH FROM (now() - created_at))::float8 FROM events WHERE relayed_at IS NULL ORDER BY seq LIMIT 1) AS age`,
    ),
    COLLECT_TIMEOUT_MS,
    'outbox backlog',
  );
  return { events: Number(rows[0].events), oldestAgeSeconds: Math.max(0, rows[0].age ?? 0) };
}

export async function readQueueDepths(queue: Queue): Promise<Record<string, number>> {
  return withTimeout(queue.getJobCounts(...QUEUE_STATES), COLLECT_TIMEOUT_MS, `queue ${queue.name}`);
}
