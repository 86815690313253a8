import { Router } from 'express';
import Joi from 'joi';
import {
  addChannelMember, channelNameSchema, clientRefSchema, createChannel, etagOf, listChannelMembers, listChannels,
  listQuerySchema, loadChannel, memberIdsOf, toChannelMemberView, toChannelView, topicSchema, updateChannel,
} from '@teamchat/core';
import { requireScope } from '../../http/account';
import { creating } from '../../http/create';
import { listRequest, sendPage } from '../../http/lists';
import { actorOf, depsOf, locals } from '../../http/locals';
import { validate } from '../../http/validate';
import { channelIdParam, ifMatchVersion } from './params';

const createBody = {
  name: channelNameSchema.required(),
  topic: topicSchema,
  client_ref: clientRefSchema,
};
const patchBody = Joi.object({ name: channelNameSchema, topic: topicSchema }).or('name', 'topic');
const channelParams = { channelId: channelIdParam };
const addMemberBody = { identity_id: Joi.string().max(80).required(), client_ref: clientRefSchema };

/** Channels and their members. */
export function channelsRouter(): Router {
  const router = Router({ mergeParams: true });
  const read = requireScope('channels:read');
  const write = requireScope('channels:write');

  router.get('/channels', read, validate({ query: listQuerySchema }), async (req, res) => {
    const page = listRequest<number>(req, res, 'channels');
    const rows = await listChannels(depsOf(req).database.db, actorOf(res), page);
    sendPage(req, res, 'channels', rows, page.limit, (r) => toChannelView(r.channel, { isMember: r.isMember }), (r) => r.channel.seq);
  });

  router.post('/channels', write, validate({ body: createBody }), creating(async ({ tx, actor, body }) => {
    const row = await createChannel(tx, { actor, name: body.name, topic: body.topic, clientRef: body.client_ref });
    return { status: 201, body: toChannelView(row, { isMember: true }), headers: { ETag: etagOf(row.version) } };
  }));

  router.get('/channels/:channelId', read, validate({ params: channelParams }), async (req, res) => {
    const db = depsOf(req).database.db;
    const { channel, member } = await loadChannel(db, actorOf(res), locals(res).valid.params.channelId, 'meta');
    const members = channel.kind === 'dm' ? (await memberIdsOf(db, [channel.id])).get(channel.id) : undefined;
    res.setHeader('ETag', etagOf(channel.version));
    res.json(toChannelView(channel, { members, isMember: member }));
  });

  router.patch('/channels/:channelId', write, validate({ params: channelParams, body: patchBody }), async (req, res) => {
    const expectedVersion = ifMatchVersion(req);
    const { body, params } = locals(res).valid;
    const row = await depsOf(req).database.db.transaction((tx) =>
      updateChannel(tx, { actor: actorOf(res), channelId: params.channelId, name: body.name, topic: body.topic, expectedVersion }));
    res.setHeader('ETag', etagOf(row.version));
    res.json(toChannelView(row));
  });

  router.get('/channels/:channelId/members', read, validate({ params: channelParams, query: listQuerySchema }), async (req, res) => {
    const channelId = locals(res).valid.params.channelId as string;
    const list = `channel-members:${channelId}`;
    const page = listRequest<number>(req, res, list);
    const rows = await listChannelMembers(depsOf(req).database.db, { actor: actorOf(res), channelId, page });
    sendPage(req, res, list, rows, page.limit, (r) => toChannelMemberView(channelId, r), (r) => r.seq);
  });

  router.post('/channels/:channelId/members', write, validate({ params: channelParams, body: addMemberBody }),
    creating(async ({ tx, actor, body, params }) => {
      const out = await addChannelMember(tx, { actor, channelId: params.channelId, identityId: body.identity_id });
      return { status: out.created ? 201 : 200, body: { ...toChannelMemberView(params.channelId, out.member), client_ref: body.client_ref ?? null } };
    }));

  return router;
}
