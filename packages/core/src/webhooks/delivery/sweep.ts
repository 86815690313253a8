import { sql, type Executor } from '@teamchat/db';

/**
 * Open rows whose wake-up may have been lost (Redis down at enqueue, Redis data lost, a job
 * removed after too many errors): due for more than `graceMs` and not under a live claim. The
 * database is the truth; the sweep re-enqueues them (idempotent by job id) and promotes a
 * delayed job whose row is already due. `accountIds` narrows it (tests sharing one database).
 */
export async function overdueDeliveries(db: Executor, now: Date, graceMs: number, accountIds?: readonly string[], limit = 1000): Promise<string[]> {
  const cutoff = new Date(now.getTime() - graceMs);
  const result = await db.execute<{ id: string }>(sql`
    SELECT id FROM webhook_deliveries
     WHERE status IN ('pending', 'retrying')
       AND COALESCE(next_retry_at, created_at) < ${cutoff}
       AND (claimed_until IS NULL OR claimed_until < ${now})
       ${accountIds ? sql`AND account_id IN (${sql.join([...accountIds, ''].map((id) => sql`${id}`), sql`, `)})` : sql``}
     ORDER BY COALESCE(next_retry_at, created_at)
     LIMIT ${limit}`);
  return result.rows.map((r) => r.id);
}
