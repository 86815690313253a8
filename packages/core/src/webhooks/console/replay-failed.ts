import { sql, type Executor } from '@teamchat/db';
import type { RedisClient } from '../../redis';
import type { RedisKeyConfig } from '../../redis-keys';
import type { Logger } from '../../logger';
import { AppError } from '../../errors';
import { getMembership } from '../../accounts/people';
import type { Actor, Via } from '../../principal';
import { isManager, type Role } from '../../scopes';
import { MANUAL_DELIVERY_LIMITS, takeManualDeliveries } from '../delivery/manual-limits';
import { deliveryLogFloor } from '../delivery/log';

/**
 * "Replay failed since…" (docs/web.md, "Bulk replay"): every event of one endpoint whose latest
 * delivery since `since` ended `dead` or `failed` (and none of whose deliveries is still open) is
 * replayed once, through the same replay use case as a single replay (same body, same event id,
 * a new delivery). The endpoint's replay limit (spec: 60 per hour) is reserved for all of them at
 * once when the job is asked for, so a bulk replay never goes past it: over it, nothing starts.
 */
export const REPLAY_FAILED_JOB = 'webhook.replay_failed';
/** At most this many events in one bulk replay: the hourly replay limit. */
export const BULK_REPLAY_MAX = MANUAL_DELIVERY_LIMITS.replay.limit;

interface ReplayableRow {
  id: string;
  [k: string]: unknown;
}

/** The deliveries to replay: per event, its latest attempt on this endpoint since `since`, when that ended dead or failed. */
export async function replayable(db: Executor, endpointId: string, sinceAsked: Date, until: Date): Promise<string[]> {
  // the log shows 30 days (deliveryLogFloor): nothing older is replayed, whatever `since` says
  const floor = deliveryLogFloor(until);
  const since = sinceAsked < floor ? floor : sinceAsked;
  const result = await db.execute<ReplayableRow>(sql`
    SELECT id FROM (
      SELECT DISTINCT ON (event_id) id, status, seq, event_id
        FROM webhook_deliveries
       WHERE endpoint_id = ${endpointId} AND created_at >= ${since} AND created_at <= ${until}
       ORDER BY event_id, seq DESC
    ) latest
     WHERE latest.status IN ('dead', 'failed')
       AND NOT EXISTS (SELECT 1 FROM webhook_deliveries o
                        WHERE o.endpoint_id = ${endpointId} AND o.event_id = latest.event_id AND o.status IN ('pending', 'retrying'))
     ORDER BY latest.seq`);
  return result.rows.map((r) => r.id);
}

export async function countReplayable(db: Executor, input: { endpointId: string; since: Date; now: Date }): Promise<number> {
  return (await replayable(db, input.endpointId, input.since, input.now)).length;
}

/** Takes `n` replays of the endpoint's hourly allowance at once, or refuses with 429 and nothing taken. */
export async function reserveReplays(redis: RedisClient, keys: RedisKeyConfig, endpointId: string, n: number, log: Logger): Promise<void> {
  const rule = MANUAL_DELIVERY_LIMITS.replay;
  const taken = await takeManualDeliveries(redis, keys, 'replay', endpointId, n, log);
  if (taken.taken) return;
  const retryAfter = taken.retryAfterS;
  throw new AppError(
    'rate_limited',
    `This endpoint allows ${rule.limit} replays per hour; ${n} would pass it. Choose a later time, or retry after ${retryAfter} s.`,
    { scope: rule.scope, limit: rule.limit, retry_after: retryAfter },
    { 'Retry-After': String(retryAfter) },
  );
}

/** Who asked for a bulk replay, as the job records it (the job acts for them when it runs). */
export interface ReplayRequester {
  via: Via;
  principal_id: string;
  user_id: string;
  identity_id: string;
}

export function replayRequesterOf(actor: Actor): ReplayRequester {
  return { via: actor.principal.via, principal_id: actor.principal.id, user_id: actor.userId, identity_id: actor.identityId };
}

/**
 * The requester as they are when the job runs: still a seat in the account with a role that may
 * manage webhooks, or the job runs nothing (as an approved step re-checks its approver).
 */
export async function requesterNow(deps: { database: { db: Executor } }, accountId: string, r: ReplayRequester): Promise<Actor> {
  const seat = await getMembership(deps.database.db, accountId, r.user_id);
  if (!seat || !isManager(seat.role as Role)) {
    throw new AppError('forbidden', 'The person who asked for this replay may no longer manage webhooks here; nothing was replayed.', { reason: 'role' });
  }
  return {
    principal: { via: r.via, id: r.principal_id, userId: r.user_id, readOnly: false },
    accountId, userId: r.user_id, identityId: r.identity_id, role: seat.role as Role, scopes: new Set(['webhooks:manage']),
  };
}

