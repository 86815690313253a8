import {
  assertManualDeliveryAllowed, createMirror, deleteMirror, listMirrorDeliveries, listMirrors, loadMirror, mirrorHealth, toMirrorDeliveryView, toMirrorView, updateMirror, type MirrorRow,
} from '@teamchat/core';
import { manualTransport, sendMirrorTest } from '@teamchat/delivery';
import { creating } from '../http/create';
import { listRequest, sendPage } from '../http/lists';
import { actorOf, depsOf, locals } from '../http/locals';
import type { Executor } from '@teamchat/db';
import type { HandlerMap } from './handlers';

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
export const mirrorsHandlers = {
  listMirrors: async (req, res) => {
    const deps = depsOf(req);
    const page = listRequest<number>(req, res, 'mirrors');
    const rows = await listMirrors(deps.database.db, { accountId: actorOf(res).accountId, page });
    const health = await mirrorHealth(deps.database.db, rows.map((r) => r.id), deps.now());
    sendPage(req, res, 'mirrors', rows, page.limit, (r) => toMirrorView(r, health.get(r.id) ?? null), (r) => r.seq);
  },

  createMirror: creating(async ({ tx, deps, actor, body }) => {
    const row = await createMirror(tx, { deps, actor, url: body.url, channels: body.channels, format: body.format, enabled: body.enabled });
    return { status: 201, body: await viewOf(tx, row, deps.now()) };
  }),

  getMirror: async (req, res) => {
    const deps = depsOf(req);
    const row = await loadMirror(deps.database.db, actorOf(res).accountId, locals(res).valid.params.mirrorId);
    res.json(await viewOf(deps.database.db, row, deps.now()));
  },

  updateMirror: async (req, res) => {
    const deps = depsOf(req);
    const { params, body } = locals(res).valid;
    const row = await deps.database.db.transaction((tx) => updateMirror(tx, { deps, actor: actorOf(res), mirrorId: params.mirrorId, ...body }));
    res.json(await viewOf(deps.database.db, row, deps.now()));
  },

  deleteMirror: async (req, res) => {
    const deps = depsOf(req);
    await deps.database.db.transaction((tx) => deleteMirror(tx, { deps, actor: actorOf(res), mirrorId: locals(res).valid.params.mirrorId }));
    res.status(204).end();
  },

  listMirrorDeliveries: async (req, res) => {
    const deps = depsOf(req);
    const { mirrorId } = locals(res).valid.params as { mirrorId: string };
    await loadMirror(deps.database.db, actorOf(res).accountId, mirrorId);
    const list = `mirrors:${mirrorId}:deliveries`;
    const page = listRequest<number>(req, res, list);
    const rows = await listMirrorDeliveries(deps.database.db, mirrorId, page);
    sendPage(req, res, list, rows, page.limit, toMirrorDeliveryView, (r) => r.seq);
  },

  testMirror: async (req, res) => {
    const deps = depsOf(req);
    const { mirrorId } = locals(res).valid.params as { mirrorId: string };
    await loadMirror(deps.database.db, actorOf(res).accountId, mirrorId);
    // The webhook test events' limit (10 a minute per target), counted per mirror.
    await assertManualDeliveryAllowed(deps.redis, deps.config, 'test', mirrorId, locals(res).log);
    res.json(await sendMirrorTest(deps, manualTransport(deps), { accountId: actorOf(res).accountId, mirrorId }));
  },
} satisfies HandlerMap;
