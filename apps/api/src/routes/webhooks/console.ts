import {
  BULK_REPLAY_MAX, countReplayable, createJob, endpointStats, getDeliveryDetail, REPLAY_FAILED_JOB, manualDeliveriesLeft,
  replayRequesterOf, reserveReplays, toJobView, type StatsWindow,
} from '@teamchat/core';
import { requireEndpoint, requireSendableEndpoint } from '@teamchat/delivery';
import { actorOf, depsOf, locals } from '../../http/locals';
import type { HandlerMap } from '../handlers';

/**
 * The dashboard's webhook routes beside the spec's (docs/web.md): one delivery with its request,
 * "Replay failed since…" (count, then a background job within the replay limit), and per-endpoint
 * stats from SQL aggregates. `webhooks:manage` like every webhook route.
 */
export const webhookConsoleHandlers = {
  getWebhookDelivery: async (req, res) => {
    const deps = depsOf(req);
    const accountId = req.params.accountId as string;
    const { endpointId, deliveryId } = locals(res).valid.params as { endpointId: string; deliveryId: string };
    const endpoint = await requireEndpoint(deps.database.db, accountId, endpointId);
    res.json(await getDeliveryDetail(deps.database.db, { accountId, endpointId, deliveryId, authorizationSet: endpoint.authorizationEnc !== null, actor: actorOf(res), now: deps.now() }));
  },

  countFailedWebhookDeliveries: async (req, res) => {
    const deps = depsOf(req);
    const accountId = req.params.accountId as string;
    const { endpointId } = locals(res).valid.params as { endpointId: string };
    await requireEndpoint(deps.database.db, accountId, endpointId);
    const from = locals(res).valid.query.since as Date;
    const [count, left] = await Promise.all([
      countReplayable(deps.database.db, { endpointId, since: from, now: deps.now() }),
      // The single-replay route spends the same hourly counter.
      manualDeliveriesLeft(deps.redis, deps.config, 'replay', endpointId, locals(res).log),
    ]);
    res.json({ since: from.toISOString(), count, replays_left_this_hour: left, max: BULK_REPLAY_MAX });
  },

  replayFailedWebhookDeliveries: async (req, res) => {
    const deps = depsOf(req);
    const l = locals(res);
    const accountId = req.params.accountId as string;
    const { endpointId } = l.valid.params as { endpointId: string };
    await requireSendableEndpoint(deps.database.db, accountId, endpointId);
    const from = l.valid.body.since as Date;
    const until = deps.now();
    const count = await countReplayable(deps.database.db, { endpointId, since: from, now: until });
    if (count > 0) await reserveReplays(deps.redis, deps.config, endpointId, count, l.log);
    const job = await createJob(deps.database.db, {
      accountId, type: REPLAY_FAILED_JOB, createdByUserId: actorOf(res).userId,
      payload: { endpoint_id: endpointId, since: from.toISOString(), until: until.toISOString(), count, requested_by: replayRequesterOf(actorOf(res)) },
    });
    // After the row is written; if Redis is away the worker's sweep enqueues it.
    await deps.jobQueue.enqueue(job.id).catch((err: Error) => l.log.warn('enqueue of replay job failed', { error: err.message }));
    res.status(202).json({ count, job_id: job.id, job_url: `/accounts/${accountId}/jobs/${job.id}`, job: toJobView(job) });
  },

  getWebhookEndpointStats: async (req, res) => {
    const deps = depsOf(req);
    const accountId = req.params.accountId as string;
    const { endpointId } = locals(res).valid.params as { endpointId: string };
    await requireEndpoint(deps.database.db, accountId, endpointId);
    res.json(await endpointStats(deps.database.db, { endpointId, window: locals(res).valid.query.window as StatsWindow, now: deps.now() }));
  },
} satisfies HandlerMap;
