import { assertManualDeliveryAllowed, listDeliveryLog, toDeliveryView } from '@teamchat/core';
import { deliverTestEvent, replayDelivery, requireEndpoint, requireSendableEndpoint } from '@teamchat/delivery';
import { actorOf, depsOf, locals } from '../../http/locals';
import { listRequest, sendPage } from '../../http/lists';
import type { HandlerMap } from '../handlers';

/**
 * The delivery side of an endpoint (spec: Webhooks): send a test event now, read the delivery
 * log, replay a logged delivery. Test and replay deliver in this process and answer the result;
 * their per-endpoint limits are core's (manual-limits.ts).
 */
export const deliveryHandlers = {
  testWebhookEndpoint: async (req, res) => {
    const deps = depsOf(req);
    const accountId = req.params.accountId as string;
    const { endpointId } = locals(res).valid.params as { endpointId: string };
    await requireSendableEndpoint(deps.database.db, accountId, endpointId);
    await assertManualDeliveryAllowed(deps.redis, deps.config, 'test', endpointId, locals(res).log);
    res.json(await deliverTestEvent(deps, { accountId, endpointId }));
  },

  listWebhookDeliveries: async (req, res) => {
    const deps = depsOf(req);
    const accountId = req.params.accountId as string;
    const { endpointId } = locals(res).valid.params as { endpointId: string };
    await requireEndpoint(deps.database.db, accountId, endpointId);
    const list = `webhooks:${endpointId}:deliveries`;
    const page = listRequest<number>(req, res, list);
    const q = locals(res).valid.query;
    const filter = { statuses: q.status, eventType: q.event_type, eventId: q.event_id, since: q.since, until: q.until };
    const rows = await listDeliveryLog(deps.database.db, endpointId, filter, page, deps.now());
    sendPage(req, res, list, rows, page.limit, toDeliveryView, (r) => r.seq);
  },

  replayWebhookDelivery: async (req, res) => {
    const deps = depsOf(req);
    const accountId = req.params.accountId as string;
    const { endpointId, deliveryId } = locals(res).valid.params as { endpointId: string; deliveryId: string };
    await requireSendableEndpoint(deps.database.db, accountId, endpointId);
    await assertManualDeliveryAllowed(deps.redis, deps.config, 'replay', endpointId, locals(res).log);
    res.json(await replayDelivery(deps, { accountId, endpointId, deliveryId, actor: actorOf(res) }));
  },
} satisfies HandlerMap;
