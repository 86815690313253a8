import { countLiveEndpoints, countSeats, type Plan } from '@teamchat/core';
import { limitsOf } from '../http/limits';
import { actorOf, depsOf, locals } from '../http/locals';
import type { HandlerMap } from './handlers';

export const accountHandlers = {
  // The account, its plan, state and seats, and each limit with the caller's seat's use of it.
  // Use figures come from this very call's limit checks (so they include this call's first
  // unit); they are null when limits are not enforced (config.limitsEnabled false).
  getAccount: async (req, res) => {
    const deps = depsOf(req);
    const account = locals(res).account!;
    const limits = deps.config.planLimits[account.plan as Plan];
    const spent = limitsOf(res);
    const [seats, endpoints] = await Promise.all([countSeats(deps.database.db, account.id), countLiveEndpoints(deps.database.db, account.id)]);
    const minute = spent?.minute;
    const units = spent?.units;
    res.json({
      id: account.id,
      name: account.name,
      plan: account.plan,
      state: account.state,
      seats,
      created_at: account.createdAt.toISOString(),
      limits: {
        enforced: deps.config.limitsEnabled,
        // true while Redis is away: the minute is counted per process and units are not charged
        degraded: spent?.degraded ?? false,
        seat_user_id: actorOf(res).userId,
        calls_per_minute: {
          limit: limits.callsPerMinute,
          used: minute ? minute.used : null,
          remaining: minute ? minute.remaining : null,
          resets_at: minute?.resetTime ? minute.resetTime.toISOString() : null,
        },
        units_per_day: {
          limit: limits.unitsPerDay,
          used: units ? units.used : null,
          remaining: units ? units.remaining : null,
          resets_at: units ? units.resetsAt.toISOString() : null,
        },
        // Summed for the account (limit × seats); `used` counts the account's live endpoints.
        webhook_endpoints_per_seat: { limit: limits.webhookEndpointsPerSeat, account_limit: limits.webhookEndpointsPerSeat * seats, used: endpoints },
      },
      your_role: actorOf(res).role,
    });
  },
} satisfies HandlerMap;
