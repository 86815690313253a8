import { laneAgesKey, randomToken, type Deps } from '@teamchat/core';
import type { Dispatcher } from './dispatcher';

/**
 * LANE AGES: since when rows of an account have waited in a live process's lanes, shared through
 * Redis so that the sweep (sweep.ts) does not take rows waiting for a slot for rows whose wake-up
 * was lost (docs/webhooks.md "The delivery engine", Sweep).
 *
 * Why: during a backlog, rows wait in a dispatcher's lane longer than the sweep's grace. The sweep
 * then woke their accounts, and the dispatcher that took the wake-up (often another process) read
 * those same rows into its own lane: both processes then claimed them, and the loser spent an
 * in-flight slot and a claim on a row the other had sent (with two workers draining 20,000 rows,
 * 27 % of the rows their pipelines ran were such copies; docs/performance.md "Rows waiting in
 * lanes and the sweep").
 *
 * Each process publishes, every LANE_AGES_PUBLISH_MS, the entry time of the oldest row waiting in
 * each of its lanes that has waited at least LANE_AGE_PUBLISHED_FROM_MS (a field of one hash, per
 * process, with its own clock's time of publishing). The sweep reads the hash, ignores entries
 * older than LANE_AGES_STALE_MS (a process that died or stopped publishing: its rows are the
 * sweep's again), and for each account takes the earliest entry time over the live processes.
 */

/** How often a process publishes its lanes' ages. */
export const LANE_AGES_PUBLISH_MS = 2000;
/** Lanes whose oldest row has waited less than this are not published (the sweep's grace covers them). */
export const LANE_AGE_PUBLISHED_FROM_MS = 3000;
/** A process's entry older than this is ignored (it died, or Redis lost its last writes). */
export const LANE_AGES_STALE_MS = 3 * LANE_AGES_PUBLISH_MS;
/** A process's entry older than this is deleted by the next reader. */
export const LANE_AGES_FORGOTTEN_MS = 6 * LANE_AGES_STALE_MS;

type Published = { at: number; since: Record<string, number> };

/**
 * Publishes `since` (account → entry time, ms, of the oldest row waiting in this process's lanes)
 * as this process's field; an empty map removes the field. Answers whether a field is now there.
 */
export async function publishLaneAges(deps: Pick<Deps, 'redis' | 'config'>, processId: string, since: ReadonlyMap<string, number>, now = Date.now()): Promise<boolean> {
  const key = laneAgesKey(deps.config);
  if (since.size === 0) {
    await deps.redis.hdel(key, processId);
    return false;
  }
  const value: Published = { at: now, since: Object.fromEntries(since) };
  await deps.redis.hset(key, processId, JSON.stringify(value));
  return true;
}

/**
 * Every live process's lanes, merged: account → the earliest entry time of a row waiting in a
 * lane of it anywhere. Entries past LANE_AGES_STALE_MS are ignored; long-dead ones are deleted.
 */
export async function readLaneAges(deps: Pick<Deps, 'redis' | 'config'>, now = Date.now()): Promise<Map<string, number>> {
  const key = laneAgesKey(deps.config);
  const fields = await deps.redis.hgetall(key);
  const out = new Map<string, number>();
  const dead: string[] = [];
  for (const [processId, raw] of Object.entries(fields)) {
    let entry: Published;
    try {
      entry = JSON.parse(raw) as Published;
    } catch {
      dead.push(processId);
      continue;
    }
    if (!(entry.at >= now - LANE_AGES_STALE_MS)) {
      if (!(entry.at >= now - LANE_AGES_FORGOTTEN_MS)) dead.push(processId);
      continue;
    }
    for (const [accountId, at] of Object.entries(entry.since)) {
      const seen = out.get(accountId);
      if (seen === undefined || at < seen) out.set(accountId, at);
    }
  }
  if (dead.length > 0) await deps.redis.hdel(key, ...dead);
  return out;
}

/**
 * Publishes, every LANE_AGES_PUBLISH_MS, since when rows have waited in this dispatcher's lanes
 * (above), for the sweep of every process: whatever the role, a process whose lanes hold
 * rows publishes them. `stop` removes this engine's entry (its rows are the sweep's again).
 */
export function startLaneAgesPublisher(deps: Deps, dispatcher: Dispatcher): { stop(): Promise<void> } {
  const id = randomToken(8);
  let published = false;
  let busy = false;
  let failing = false;
  const publish = () => {
    if (busy) return;
    const since = dispatcher.waitingSince(Date.now() - LANE_AGE_PUBLISHED_FROM_MS);
    if (since.size === 0 && !published) return;
    busy = true;
    publishLaneAges(deps, id, since)
      .then((there) => {
        published = there;
        failing = false;
      })
      .catch((err: Error) => {
        // The sweep then counts these rows overdue after its grace, as without lanes: copies, never losses.
        if (!failing) deps.logger.warn('publishing the lanes\' ages failed', { error: err.message });
        failing = true;
      })
      .finally(() => {
        busy = false;
      });
  };
  const timer = setInterval(publish, LANE_AGES_PUBLISH_MS);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      if (published) await publishLaneAges(deps, id, new Map()).catch(() => undefined);
    },
  };
}
