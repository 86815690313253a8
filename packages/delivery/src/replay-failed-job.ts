import Joi from 'joi';
import { AppError, BULK_REPLAY_MAX, REPLAY_FAILED_JOB, defineJob, replayable, requesterNow, type ReplayRequester } from '@teamchat/core';
import { replayDelivery } from './replay';

/**
 * The replay job: recomputes the list as of the request (`until`), replays each in order through
 * the one replay use case (so its rules hold: a `text` body from a channel the requester cannot
 * read is not sent, and is counted as `skipped`), and reports.
 */
export const replayFailedJob = defineJob<{ endpoint_id: string; since: string; until: string; count: number; requested_by: ReplayRequester }>({
  type: REPLAY_FAILED_JOB,
  payload: Joi.object({
    endpoint_id: Joi.string().max(80).required(),
    since: Joi.date().iso().required(),
    until: Joi.date().iso().required(),
    count: Joi.number().integer().min(0).max(BULK_REPLAY_MAX).required(),
    requested_by: Joi.object({
      via: Joi.string().valid('api_key', 'agent_token', 'web_session').required(),
      principal_id: Joi.string().max(80).required(),
      user_id: Joi.string().max(80).required(),
      identity_id: Joi.string().max(80).required(),
    }).required(),
  }),
  async run(deps, payload, job) {
    const actor = await requesterNow(deps, job.accountId, payload.requested_by);
    const ids = (await replayable(deps.database.db, payload.endpoint_id, new Date(payload.since), new Date(payload.until))).slice(0, payload.count);
    const outcomes: Record<string, number> = {};
    let replayed = 0;
    let skipped = 0;
    for (const deliveryId of ids) {
      try {
        const r = await replayDelivery(deps, { accountId: job.accountId, endpointId: payload.endpoint_id, deliveryId, actor });
        outcomes[r.status] = (outcomes[r.status] ?? 0) + 1;
        replayed += 1;
      } catch (err) {
        if (err instanceof AppError && err.extras.reason === 'cannot_read_channel') skipped += 1;
        else throw err;
      }
    }
    return { replayed, skipped, outcomes };
  },
});
