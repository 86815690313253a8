import { Router } from 'express';
import Joi from 'joi';
import { assertManualDeliveryAllowed, listDeliveries, listQuerySchema, toDeliveryView } from '@teamchat/core';
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

  router.get('/webhooks/:endpointId/deliveries', manage, validate({ params: endpointParams, query: listQuerySchema }), async (req, res) => {
    const deps = depsOf(req);
    const accountId = req.params.accountId as string;
    const { endpointId } = locals(res).valid.params as { endpointId: string };
    await requireEndpoint(deps.database.db, accountId, endpointId);
    const list = `webhooks:${endpointId}:deliveries`;
    const page = listRequest<number>(req, res, list);
    const rows = await listDeliveries(deps.database.db, endpointId, page);
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
