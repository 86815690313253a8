import type { Response } from 'express';
import {
  assertManualDeliveryAllowed, deleteEndpoint, emailNotifications, etagOf, getEndpoint, listEndpoints, registerEndpoint,
  revealSecret, rotateSecret, toWebhookEndpointView, updateEndpoint, type Deps, type RecordedNotification,
} from '@teamchat/core';
import { deliverEnableTest } from '@teamchat/delivery';
import { creating } from '../../http/create';
import { listRequest, sendPage } from '../../http/lists';
import { actorOf, depsOf, locals } from '../../http/locals';
import { ifMatchVersion } from '../messaging/params';
import type { HandlerMap } from '../handlers';

/**
 * Emails the notices written by a committed change, in the background: the answer does not wait
 * on SMTP. emailNotifications never throws (it logs).
 */
function mailInBackground(deps: Deps, notifications: RecordedNotification[]): void {
  if (notifications.length > 0) void emailNotifications(deps, notifications);
}

function sendEndpoint<T extends { version: number }>(res: Response, status: number, body: T): void {
  res.setHeader('ETag', etagOf(body.version));
  res.status(status).json(body);
}

/**
 * Webhook endpoints and their lifecycle (spec: Webhooks; Webhook endpoint enablement; Secret
 * rotation). Every route needs `webhooks:manage` (owners' and admins' only); reveal and rotate
 * are web session only; the rules a credential meets elsewhere are the use cases'.
 */
export const endpointHandlers = {
  listWebhookEndpoints: async (req, res) => {
    const deps = depsOf(req);
    const page = listRequest<number>(req, res, 'webhooks');
    const now = deps.now();
    const rows = await listEndpoints(deps.database.db, { accountId: actorOf(res).accountId, now, page });
    sendPage(req, res, 'webhooks', rows, page.limit, (r) => toWebhookEndpointView(r.row, { health: r.health, now }), (r) => r.row.seq);
  },

  registerWebhookEndpoint: creating(async ({ tx, deps, actor, body }) => {
    const out = await registerEndpoint(tx, {
      deps, actor, url: body.url, events: body.events, channels: body.channels, payload: body.payload,
      enabled: body.enabled, authorization: body.authorization,
    });
    const view = toWebhookEndpointView(out.endpoint, { now: deps.now() });
    return {
      status: 201,
      // The secret is in this answer only: an Idempotency-Key replay answers without it.
      body: out.secret ? { ...view, secret: out.secret } : view,
      storedBody: view,
      headers: { ETag: etagOf(out.endpoint.version) },
      afterCommit: async () => mailInBackground(deps, out.notifications),
    };
  }),

  getWebhookEndpoint: async (req, res) => {
    const deps = depsOf(req);
    const out = await getEndpoint(deps.database.db, { accountId: actorOf(res).accountId, endpointId: locals(res).valid.params.endpointId, now: deps.now() });
    sendEndpoint(res, 200, toWebhookEndpointView(out.row, { health: out.health, now: deps.now() }));
  },

  updateWebhookEndpoint: async (req, res) => {
    const deps = depsOf(req);
    const actor = actorOf(res);
    const { params, body } = locals(res).valid;
    const expectedVersion = ifMatchVersion(req);
    const out = await deps.database.db.transaction(async (tx) => {
      const updated = await updateEndpoint(tx, { deps, actor, endpointId: params.endpointId, expectedVersion, ...body });
      // Enabling sends a test event, one of the endpoint's test events of the minute (spec:
      // Limits, 10 per minute per endpoint): over the limit the enable is refused with its 429
      // and this transaction rolls back, so nothing changes.
      if (updated.enabled) await assertManualDeliveryAllowed(deps.redis, deps.config, 'test', updated.endpoint.id, locals(res).log);
      return updated;
    });
    mailInBackground(deps, out.notifications);
    const view = toWebhookEndpointView(out.endpoint, { now: deps.now() });
    // Enabling delivers a test event first (once committed); the enable stands whatever its result.
    const testDelivery = out.enabled ? await deliverEnableTest(deps, { accountId: actor.accountId, endpointId: out.endpoint.id, holdUntil: out.endpoint.enableTestUntil }) : undefined;
    sendEndpoint(res, 200, testDelivery ? { ...view, test_delivery: testDelivery } : view);
  },

  deleteWebhookEndpoint: async (req, res) => {
    const deps = depsOf(req);
    await deps.database.db.transaction((tx) => deleteEndpoint(tx, { deps, actor: actorOf(res), endpointId: locals(res).valid.params.endpointId }));
    res.status(204).end();
  },

  revealWebhookSecret: async (req, res) => {
    const deps = depsOf(req);
    const out = await deps.database.db.transaction((tx) => revealSecret(tx, { deps, actor: actorOf(res), endpointId: locals(res).valid.params.endpointId }));
    res.setHeader('Cache-Control', 'no-store');
    sendEndpoint(res, 200, { ...toWebhookEndpointView(out.endpoint, { now: deps.now() }), secret: out.secret });
  },

  rotateWebhookSecret: async (req, res) => {
    const deps = depsOf(req);
    const out = await deps.database.db.transaction((tx) => rotateSecret(tx, { deps, actor: actorOf(res), endpointId: locals(res).valid.params.endpointId }));
    res.setHeader('Cache-Control', 'no-store');
    sendEndpoint(res, 200, { ...toWebhookEndpointView(out.endpoint, { now: deps.now() }), secret: out.secret });
  },
} satisfies HandlerMap;
