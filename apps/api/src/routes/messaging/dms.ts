import { etagOf, listDms, memberIdsOf, openDm, toChannelView } from '@teamchat/core';
import { creating } from '../../http/create';
import { listRequest, sendPage } from '../../http/lists';
import { actorOf, depsOf } from '../../http/locals';
import type { HandlerMap } from '../handlers';

/** Direct messages: a DM is a channel of kind `dm`; post and read it through /channels/{id}/messages. */
export const dmHandlers = {
  listDms: async (req, res) => {
    const db = depsOf(req).database.db;
    const page = listRequest<number>(req, res, 'dms');
    const rows = await listDms(db, actorOf(res), page);
    const members = await memberIdsOf(db, rows.map((r) => r.id));
    sendPage(req, res, 'dms', rows, page.limit, (r) => toChannelView(r, { members: members.get(r.id) ?? [] }), (r) => r.seq);
  },

  // Opening the same member set again answers 200 with the existing DM; client_ref echoes this request's.
  openDm: creating(async ({ tx, actor, body }) => {
    const out = await openDm(tx, { actor, others: body.members, clientRef: body.client_ref });
    return {
      status: out.created ? 201 : 200,
      body: { ...toChannelView(out.channel, { members: out.members }), client_ref: body.client_ref ?? null },
      headers: { ETag: etagOf(out.channel.version) },
    };
  }),
} satisfies HandlerMap;
