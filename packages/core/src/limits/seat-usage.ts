import { and, asc, eq, members, users, type Executor } from '@teamchat/db';
import type { Deps } from '../context';
import type { Plan } from '../plans';
import { redisAvailability } from './availability';
import { MINUTE_WINDOW_MS } from './call-charge';
import { minuteKey, nextUtcMidnight, unitsKey } from './keys';

/**
 * Today's use of each seat of an account against its plan's limits (GET /accounts/{id}/usage,
 * docs/web.md "Account usage"): calls in the current minute window and call units spent today,
 * read from the same Redis counters the limits charge (one pipeline), charging nothing.
 * An owner or admin sees every seat; a member only their own. While Redis is away (the limits'
 * availability says so, or the read fails: a pipeline answers each command's error rather than
 * rejecting) the figures are unknown, not zero: `degraded: true` and `null` figures.
 */
export interface SeatUsage {
  user_id: string;
  email: string;
  role: string;
  calls_this_minute: number | null;
  units_today: number | null;
}

export async function accountUsage(
  deps: Pick<Deps, 'redis' | 'config' | 'now'> & { database: { db: Executor } },
  input: { accountId: string; plan: Plan; onlyUserId?: string },
): Promise<{ plan: Plan; limits: { calls_per_minute: number; units_per_day: number }; units_reset_at: string; degraded: boolean; seats: SeatUsage[] }> {
  const limits = deps.config.planLimits[input.plan];
  const now = deps.now();
  const seats = await deps.database.db
    .select({ userId: members.userId, role: members.role, email: users.email })
    .from(members)
    .innerJoin(users, eq(users.id, members.userId))
    .where(and(eq(members.accountId, input.accountId), input.onlyUserId ? eq(members.userId, input.onlyUserId) : undefined))
    .orderBy(asc(members.seq));
  const keys = deps.config;
  const availability = redisAvailability(deps.redis);
  let degraded = !availability.usable();
  let answers: Array<[Error | null, unknown]> = [];
  if (!degraded) {
    try {
      const pipe = deps.redis.pipeline();
      for (const s of seats) {
        pipe.hmget(minuteKey(keys, input.accountId, s.userId), 's', 'n');
        pipe.get(unitsKey(keys, input.accountId, s.userId, now));
      }
      answers = ((await pipe.exec()) ?? []) as Array<[Error | null, unknown]>;
      degraded = answers.some(([err]) => err !== null);
    } catch {
      degraded = true;
    }
    if (degraded) availability.failed();
  }
  return {
    plan: input.plan,
    limits: { calls_per_minute: limits.callsPerMinute, units_per_day: limits.unitsPerDay },
    units_reset_at: nextUtcMidnight(now).toISOString(),
    degraded,
    seats: seats.map((s, i) => {
      if (degraded) return { user_id: s.userId, email: s.email, role: s.role, calls_this_minute: null, units_today: null };
      const [start, n] = (answers[2 * i]?.[1] as [string | null, string | null] | undefined) ?? [null, null];
      const live = start !== null && Number(start) + MINUTE_WINDOW_MS > now.getTime();
      return {
        user_id: s.userId, email: s.email, role: s.role,
        calls_this_minute: live ? Number(n ?? 0) : 0,
        units_today: Number((answers[2 * i + 1]?.[1] as string | null) ?? 0),
      };
    }),
  };
}
