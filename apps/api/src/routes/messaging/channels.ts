import {
  addChannelMember, createChannel, etagOf, listChannelMembers, listChannels, loadChannel, memberIdsOf, toChannelMemberView,
  toChannelView, updateChannel,
} from '@teamchat/core';
import { creating } from '../../http/create';
import { listRequest, sendPage } from '../../http/lists';
import { actorOf, depsOf, locals } from '../../http/locals';
import type { HandlerMap } from '../handlers';
import { ifMatchVersion } from './params';

/** Channels and their members. */
export const channelHandlers = {
  listChannels: async (req, res) => {
    const page = listRequest<number>(req, res, 'channels');
    const rows = await listChannels(depsOf(req).database.db, actorOf(res), page);
    sendPage(req, res, 'channels', rows, page.limit, (r) => toChannelView(r.channel, { isMember: r.isMember }), (r) => r.channel.seq);
  },

  createChannel: creating(async ({ tx, deps, actor, body }) => {
    const row = await createChannel(tx, { actor, name: body.name, topic: body.topic, clientRef: body.client_ref });
    return {
      status: 201, body: toChannelView(row, { isMember: true }), headers: { ETag: etagOf(row.version) },
      afterCommit: async () => deps.relayWakeUps.committed(), // channel.created is an outbox row
    };
  }),

  getChannel: async (req, res) => {
    const db = depsOf(req).database.db;
    const { channel, member } = await loadChannel(db, actorOf(res), locals(res).valid.params.channelId, 'meta');
    const members = channel.kind === 'dm' ? (await memberIdsOf(db, [channel.id])).get(channel.id) : undefined;
    res.setHeader('ETag', etagOf(channel.version));
    res.json(toChannelView(channel, { members, isMember: member }));
  },

  updateChannel: async (req, res) => {
    const expectedVersion = ifMatchVersion(req);
    const { body, params } = locals(res).valid;
    const row = await depsOf(req).database.db.transaction((tx) =>
      updateChannel(tx, { actor: actorOf(res), channelId: params.channelId, name: body.name, topic: body.topic, expectedVersion }));
    res.setHeader('ETag', etagOf(row.version));
    res.json(toChannelView(row));
  },

  listChannelMembers: async (req, res) => {
    const channelId = locals(res).valid.params.channelId as string;
    const list = `channel-members:${channelId}`;
    const page = listRequest<number>(req, res, list);
    const rows = await listChannelMembers(depsOf(req).database.db, { actor: actorOf(res), channelId, page });
    sendPage(req, res, list, rows, page.limit, (r) => toChannelMemberView(channelId, r), (r) => r.seq);
  },

  addChannelMember: creating(async ({ tx, actor, body, params }) => {
    const out = await addChannelMember(tx, { actor, channelId: params.channelId, identityId: body.identity_id });
    return { status: out.created ? 201 : 200, body: { ...toChannelMemberView(params.channelId, out.member), client_ref: body.client_ref ?? null } };
  }),
} satisfies HandlerMap;
