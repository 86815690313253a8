import { sql, type Executor } from '@teamchat/db';

/** Rows of one account the sweep hands on per pass at most: a backlog of one account never crowds out another's. */
export const SWEEP_PER_ACCOUNT = 200;

/**
 * Open rows whose wake-up may have been lost (Redis down at enqueue, Redis data lost, a process
 * that died with rows waiting in its dispatcher, a row its dispatcher had no room for): due for
 * more than `graceMs` and not under a live claim. The database is the truth; the sweep
 * re-enqueues them (idempotent by job id) and promotes a delayed job whose row is already due.
 * At most SWEEP_PER_ACCOUNT rows of each account, oldest first; rows of a read-only or suspended
 * account are left until it is active again. `accountIds` narrows it (tests sharing one database).
 */
export async function overdueDeliveries(db: Executor, now: Date, graceMs: number, accountIds?: readonly string[], limit = 1000): Promise<string[]> {
  const cutoff = new Date(now.getTime() - graceMs);
  const result = await db.execute<{ id: string }>(sql`
    SELECT id FROM (
      SELECT d.id, COALESCE(d.next_retry_at, d.created_at) AS due,
             row_number() OVER (PARTITION BY d.account_id ORDER BY COALESCE(d.next_retry_at, d.created_at)) AS n
        FROM webhook_deliveries d
        JOIN accounts a ON a.id = d.account_id AND a.state = 'active'
       WHERE d.status IN ('pending', 'retrying')
         AND COALESCE(d.next_retry_at, d.created_at) < ${cutoff}
         AND (d.claimed_until IS NULL OR d.claimed_until < ${now})
         ${accountIds ? sql`AND d.account_id IN (${sql.join([...accountIds, ''].map((id) => sql`${id}`), sql`, `)})` : sql``}
    ) overdue
     WHERE n <= ${SWEEP_PER_ACCOUNT}
     ORDER BY due
     LIMIT ${limit}`);
  return result.rows.map((r) => r.id);
}
