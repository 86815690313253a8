import { and, eq, isNull, sql, webhookEndpoints, type Executor } from '@teamchat/db';
import { countSeats, requireAccount } from '../../accounts/accounts';
import type { Config } from '../../config';
import { AppError } from '../../errors';
import type { Plan } from '../../plans';

/** Live (not deleted) endpoints of the account: what the per-seat count limit counts. */
export async function countLiveEndpoints(db: Executor, accountId: string): Promise<number> {
  const [row] = await db
    .select({ n: sql<number>`count(*)::int` })
    .from(webhookEndpoints)
    .where(and(eq(webhookEndpoints.accountId, accountId), isNull(webhookEndpoints.deletedAt)));
  return row.n;
}

/**
 * Webhook endpoints per seat, summed for the account (spec: Limits; plans.ts). Call inside the
 * registering transaction: a transaction-scoped advisory lock per account serialises concurrent
 * registrations, so the count is exact (N free places, N concurrent registrations pass, no more).
 * An advisory lock rather than locking the account row, which every insert referencing the
 * account would otherwise wait on. Over the limit: 429 budget_exceeded with
 * `budget {limit, used, resets_at: null}` (a count limit never resets by itself).
 */
export async function claimEndpointPlace(
  tx: Executor,
  config: Pick<Config, 'planLimits'>,
  accountId: string,
): Promise<void> {
  await tx.execute(sql`SELECT pg_advisory_xact_lock(hashtextextended(${`webhook-endpoints:${accountId}`}, 0))`);
  const account = await requireAccount(tx, accountId);
  const perSeat = config.planLimits[account.plan as Plan].webhookEndpointsPerSeat;
  const seats = await countSeats(tx, accountId);
  const limit = perSeat * seats;
  const used = await countLiveEndpoints(tx, accountId);
  if (used >= limit) {
    throw new AppError(
      'budget_exceeded',
      `This account has ${used} webhook endpoints, its limit (${perSeat} per seat × ${seats} seats); delete one or add seats.`,
      { scope: 'webhook_endpoints_per_seat', budget: { limit, used, resets_at: null } },
    );
  }
}
