import { and, eq, gte, identities, sql, type Executor } from '@teamchat/db';
import { requireAccount } from '../accounts/accounts';
import type { Config } from '../config';
import { AppError } from '../errors';
import { nextUtcMidnight } from '../limits/keys';
import type { Plan } from '../plans';

/**
 * Agents one seat may register per UTC day (plans.ts `agentsPerSeatPerDay`; docs/api.md
 * "Agents per seat per day"): each agent can be mentioned, and each mention may cost its seat a
 * delivery, so minting agents is bounded like any other spend. Call inside the registering
 * transaction: a transaction-scoped advisory lock per seat serialises concurrent registrations,
 * so the count is exact under any burst. The count is the seat's agents created since 00:00 UTC
 * (deleted or not: the identities table keeps them). Over it: 429 budget_exceeded with
 * `budget {limit, used, resets_at}` (the next 00:00 UTC) and Retry-After.
 */
export async function claimAgentRegistration(
  tx: Executor,
  config: Pick<Config, 'planLimits'>,
  input: { accountId: string; userId: string; now: Date },
): Promise<void> {
  await tx.execute(sql`SELECT pg_advisory_xact_lock(hashtextextended(${`agent-registrations:${input.accountId}:${input.userId}`}, 0))`);
  const account = await requireAccount(tx, input.accountId);
  const limit = config.planLimits[account.plan as Plan].agentsPerSeatPerDay;
  const resetsAt = nextUtcMidnight(input.now);
  const dayStart = new Date(resetsAt.getTime() - 86_400_000);
  const [row] = await tx
    .select({ n: sql<number>`count(*)::int` })
    .from(identities)
    .where(and(
      eq(identities.accountId, input.accountId),
      eq(identities.kind, 'agent'),
      eq(identities.approvedByUserId, input.userId),
      gte(identities.createdAt, dayStart),
    ));
  const used = row.n;
  if (used >= limit) {
    const retryAfter = Math.max(1, Math.ceil((resetsAt.getTime() - input.now.getTime()) / 1000));
    throw new AppError(
      'budget_exceeded',
      `This seat has registered ${used} agents today, its plan's limit; more can be registered after 00:00 UTC.`,
      { scope: 'agents_per_seat_per_day', budget: { limit, used, resets_at: resetsAt.toISOString() } },
      { 'Retry-After': String(retryAfter) },
    );
  }
}
