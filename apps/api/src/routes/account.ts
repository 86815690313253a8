import { Router } from 'express';
import { countSeats } from '@teamchat/core';
import { requireScope } from '../http/account';
import { actorOf, depsOf, locals } from '../http/locals';

export function accountRouter(): Router {
  const router = Router({ mergeParams: true });

  router.get('/', requireScope('account:manage'), async (req, res) => {
    const deps = depsOf(req);
    const account = locals(res).account!;
    const limits = deps.config.planLimits[account.plan as keyof typeof deps.config.planLimits];
    res.json({
      id: account.id,
      name: account.name,
      plan: account.plan,
      state: account.state,
      seats: await countSeats(deps.database.db, account.id),
      created_at: account.createdAt.toISOString(),
      limits: {
        calls_per_minute: { limit: limits.callsPerMinute },
        units_per_day: { limit: limits.unitsPerDay },
        webhook_endpoints_per_seat: { limit: limits.webhookEndpointsPerSeat },
      },
      your_role: actorOf(res).role,
    });
  });

  return router;
}
