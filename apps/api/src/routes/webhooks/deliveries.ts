import { Router } from 'express';
import Joi from 'joi';
import { assertManualDeliveryAllowed, listDeliveryLog, listQuerySchema, toDeliveryView } from '@teamchat/core';
import { deliverTestEvent, replayDelivery, requireEndpoint, requireSendableEndpoint } from '@teamchat/delivery';
import { requireScope } from '../../http/account';
import { actorOf, depsOf, locals } from '../../http/locals';
import { listRequest, sendPage } from '../../http/lists';
import { validate } from '../../http/validate';

/**
 * The delivery side of an endpoint (spec: Webhooks): send a test event now, read the delivery
 * log, replay a logged delivery. Test and replay deliver in this process and answer the result;
 * their per-endpoint limits are core's (manual-limits.ts).
 */
const endpointParams = { endpointId: Joi.string().max(80).required() };

/** The log's filters (docs/web.md, "Delivery log"): `status` is a comma-separated list of statuses. */
const STATUSES = ['pending', 'delivered', 'retrying', 'failed', 'dead'];
const logQuery = {
  ...listQuerySchema,
  status: Joi.string().max(100).custom((v: string, helpers) => {
    const list = v.split(',').map((s) => s.trim()).filter(Boolean);
    return list.every((s) => STATUSES.includes(s)) ? list : helpers.error('any.invalid');
  }).messages({ 'any.invalid': `{{#label}} must be a comma-separated list of ${STATUSES.join(', ')}` }),
  event_type: Joi.string().max(64),
  event_id: Joi.string().max(80),
  since: Joi.date().iso(),
  until: Joi.date().iso(),
};

export function webhookDeliveriesRouter(): Router {
  const router = Router({ mergeParams: true });
  const manage = requireScope('webhooks:manage');

  router.post('/webhooks/:endpointId/test', manage, validate({ params: endpointParams }), async (req, res) => {
    const deps = depsOf(req);
    const accountId = req.params.accountId as string;
    const { endpointId } = locals(res).valid.params as { endpointId: string };
    await requireSendableEndpoint(deps.database.db, accountId, endpointId);
    await assertManualDeliveryAllowed(deps.redis, deps.config.redisPrefix, 'test', endpointId);
    res.json(await deliverTestEvent(deps, { accountId, endpointId }));
  });

  router.get('/webhooks/:endpointId/deliveries', manage, validate({ params: endpointParams, query: logQuery }), async (req, res) => {
    const deps = depsOf(req);
    const accountId = req.params.accountId as string;
    const { endpointId } = locals(res).valid.params as { endpointId: string };
    await requireEndpoint(deps.database.db, accountId, endpointId);
    const list = `webhooks:${endpointId}:deliveries`;
    const page = listRequest<number>(req, res, list);
    const q = locals(res).valid.query;
    const filter = { statuses: q.status, eventType: q.event_type, eventId: q.event_id, since: q.since, until: q.until };
    const rows = await listDeliveryLog(deps.database.db, endpointId, filter, page);
    sendPage(req, res, list, rows, page.limit, toDeliveryView, (r) => r.seq);
  });

  router.post(
    '/webhooks/:endpointId/deliveries/:deliveryId/replay',
    manage,
    validate({ params: { ...endpointParams, deliveryId: Joi.string().max(80).required() } }),
    async (req, res) => {
      const deps = depsOf(req);
      const accountId = req.params.accountId as string;
      const { endpointId, deliveryId } = locals(res).valid.params as { endpointId: string; deliveryId: string };
      await requireSendableEndpoint(deps.database.db, accountId, endpointId);
      await assertManualDeliveryAllowed(deps.redis, deps.config.redisPrefix, 'replay', endpointId);
      res.json(await replayDelivery(deps, { accountId, endpointId, deliveryId, actor: actorOf(res) }));
    },
  );

  return router;
}
