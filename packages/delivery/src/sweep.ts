import { sql, type Executor } from '@teamchat/db';

/**
 * Accounts with open rows whose wake-up may have been lost (Redis down at enqueue, Redis data
 * lost, a process that died with rows waiting in its dispatcher, a row its dispatcher had no room
 * for): rows due for more than `graceMs` and not under a live claim. The database is the truth;
 * the sweep wakes each such account (queues.ts), and the dispatcher that takes the wake-up reads
 * the account's due rows, oldest first. Accounts that are read-only or suspended are left until
 * they are active again. `options.accountIds` narrows it (tests sharing one database).
 *
 * Rows waiting in a live process's lane are not lost: for an account whose rows have waited in a
 * lane since some time (`waitingSince`, lane-ages.ts), only rows due before that time less the
 * grace count (a backlog's rows wait in lanes longer than the grace, and waking their account
 * had another dispatcher read them into its lane too: two processes on the same rows).
 *
 * The accounts with open rows are found by skipping through the open-rows index one account at a
 * time (a loose index scan), and each is asked for one overdue row: the cost grows with the
 * accounts that have open rows, not with the rows (an outage's 720,000 are 16 probes).
 */
export async function overdueAccounts(
  db: Executor, now: Date, graceMs: number,
  options: {
    /** only these accounts (tests sharing one database) */
    accountIds?: readonly string[];
    /**
     * per account, since when rows of it have waited in a live process's lane (lane-ages.ts): its
     * rows due after that less the grace may be waiting there, so only rows due before that count
     */
    waitingSince?: ReadonlyMap<string, number>;
    limit?: number;
  } = {},
): Promise<string[]> {
  const { accountIds, waitingSince, limit = 1000 } = options;
  const cutoff = new Date(now.getTime() - graceMs);
  const waits = [...(waitingSince ?? [])].filter(([, since]) => since - graceMs < cutoff.getTime());
  const laneIds = waits.map(([id]) => id);
  const laneCutoffs = waits.map(([, since]) => new Date(since - graceMs));
  // (each array is ONE parameter: drizzle's template would spread a bare array into a list)
  const result = await db.execute<{ id: string }>(sql`
    WITH RECURSIVE open_accounts AS (
      (SELECT account_id FROM webhook_deliveries WHERE status IN ('pending', 'retrying') ORDER BY account_id LIMIT 1)
      UNION ALL
      SELECT (SELECT d.account_id FROM webhook_deliveries d
               WHERE d.status IN ('pending', 'retrying') AND d.account_id > o.account_id
               ORDER BY d.account_id LIMIT 1)
        FROM open_accounts o WHERE o.account_id IS NOT NULL
    )
    SELECT o.account_id AS id
      FROM open_accounts o
      JOIN accounts a ON a.id = o.account_id AND a.state = 'active'
     WHERE EXISTS (SELECT 1 FROM webhook_deliveries d
                    WHERE d.account_id = o.account_id AND d.status IN ('pending', 'retrying')
                      AND COALESCE(d.next_retry_at, d.created_at) < COALESCE(
                            (SELECT w.cutoff FROM unnest(${sql.param(laneIds)}::text[], ${sql.param(laneCutoffs.map((d) => d.toISOString()))}::timestamptz[]) AS w(id, cutoff) WHERE w.id = o.account_id),
                            ${cutoff})
                      AND (d.claimed_until IS NULL OR d.claimed_until < ${now}))
       ${accountIds ? sql`AND o.account_id IN (${sql.join([...accountIds, ''].map((id) => sql`${id}`), sql`, `)})` : sql``}
     LIMIT ${limit}`);
  return result.rows.map((r) => r.id);
}
