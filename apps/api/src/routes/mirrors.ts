import { Router } from 'express';
import {
  assertManualDeliveryAllowed, createMirror, deleteMirror, listMirrorDeliveries, listMirrors, listQuerySchema, loadMirror, mirrorHealth, toMirrorDeliveryView, toMirrorView, updateMirror, type MirrorRow,
} from '@teamchat/core';
import { manualTransport, sendMirrorTest } from '@teamchat/delivery';
import { requireScope, requireWebSession } from '../http/account';
import { creating } from '../http/create';
import { listRequest, sendPage } from '../http/lists';
import { actorOf, depsOf, locals } from '../http/locals';
import type { Executor } from '@teamchat/db';
import { validate } from '../http/validate';
import { createMirrorBody, mirrorParams, patchMirrorBody } from './mirrors.schemas';

/** A mirror with its health, as every route answers it. */
async function viewOf(db: Executor, row: MirrorRow, now: Date) {
  const health = await mirrorHealth(db, [row.id], now);
  return toMirrorView(row, health.get(row.id) ?? null);
}

/**
 * Channel mirrors (docs/mirrors.md): web session only (a credential gets 403 forbidden,
 * `web_session_required`), owners and admins only (the `webhooks:manage` scope of their role; a
 * member gets 403 forbidden). Nothing here receives from the other tool: there is no inbound path.
 */
export function mirrorsRouter(): Router {
  const router = Router({ mergeParams: true });
  const guard = [requireWebSession, requireScope('webhooks:manage')];
  const one = '/mirrors/:mirrorId';

  router.get('/mirrors', ...guard, validate({ query: listQuerySchema }), async (req, res) => {
    const deps = depsOf(req);
    const page = listRequest<number>(req, res, 'mirrors');
    const rows = await listMirrors(deps.database.db, { accountId: actorOf(res).accountId, page });
    const health = await mirrorHealth(deps.database.db, rows.map((r) => r.id), deps.now());
    sendPage(req, res, 'mirrors', rows, page.limit, (r) => toMirrorView(r, health.get(r.id) ?? null), (r) => r.seq);
  });

  router.post('/mirrors', ...guard, validate({ body: createMirrorBody }), creating(async ({ tx, deps, actor, body }) => {
    const row = await createMirror(tx, { deps, actor, url: body.url, channels: body.channels, format: body.format, enabled: body.enabled });
    return { status: 201, body: await viewOf(tx, row, deps.now()) };
  }));

  router.get(one, ...guard, validate({ params: mirrorParams }), async (req, res) => {
    const deps = depsOf(req);
    const row = await loadMirror(deps.database.db, actorOf(res).accountId, locals(res).valid.params.mirrorId);
    res.json(await viewOf(deps.database.db, row, deps.now()));
  });

  router.patch(one, ...guard, validate({ params: mirrorParams, body: patchMirrorBody }), async (req, res) => {
    const deps = depsOf(req);
    const { params, body } = locals(res).valid;
    const row = await deps.database.db.transaction((tx) => updateMirror(tx, { deps, actor: actorOf(res), mirrorId: params.mirrorId, ...body }));
    res.json(await viewOf(deps.database.db, row, deps.now()));
  });

  router.delete(one, ...guard, validate({ params: mirrorParams }), async (req, res) => {
    const deps = depsOf(req);
    await deps.database.db.transaction((tx) => deleteMirror(tx, { deps, actor: actorOf(res), mirrorId: locals(res).valid.params.mirrorId }));
    res.status(204).end();
  });

  router.get(`${one}/deliveries`, ...guard, validate({ params: mirrorParams, query: listQuerySchema }), async (req, res) => {
    const deps = depsOf(req);
    const { mirrorId } = locals(res).valid.params as { mirrorId: string };
    await loadMirror(deps.database.db, actorOf(res).accountId, mirrorId);
    const list = `mirrors:${mirrorId}:deliveries`;
    const page = listRequest<number>(req, res, list);
    const rows = await listMirrorDeliveries(deps.database.db, mirrorId, page);
    sendPage(req, res, list, rows, page.limit, toMirrorDeliveryView, (r) => r.seq);
  });

  router.post(`${one}/test`, ...guard, validate({ params: mirrorParams }), async (req, res) => {
    const deps = depsOf(req);
    const { mirrorId } = locals(res).valid.params as { mirrorId: string };
    await loadMirror(deps.database.db, actorOf(res).accountId, mirrorId);
    // The webhook test events' limit (10 a minute per target), counted per mirror.
    await assertManualDeliveryAllowed(deps.redis, deps.config.redisPrefix, 'test', mirrorId);
    res.json(await sendMirrorTest(deps, manualTransport(deps), { accountId: actorOf(res).accountId, mirrorId }));
  });

  return router;
}
