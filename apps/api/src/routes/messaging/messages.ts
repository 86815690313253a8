import {
  AppError, addReaction, editMessage, etagOf, listMessages, outboxTransaction, postMessage, readThread, removeReaction, requestMessageDelete,
  toMessageView, type MessageWithReactions,
} from '@teamchat/core';
import { creatingAtomic } from '../../http/create';
import { listRequest, sendPage, sendPageText } from '../../http/lists';
import { mcpSessionOf } from '../../http/mcp-session';
import { actorOf, depsOf, locals } from '../../http/locals';
import { runConfirmingAuthentication } from '../../http/remembered-auth';
import type { HandlerMap } from '../handlers';
import { ifMatchVersion, parseTs, tsKeyset } from './params';

const view = (m: MessageWithReactions) => toMessageView(m.row, m.reactions);
const keyOf = (m: MessageWithReactions) => m.row.tsMicros.toString();

/** Messages, threads and reactions of a channel (DMs included: a DM is a channel). */
export const messageHandlers = {
  listMessages: async (req, res) => {
    const channelId = locals(res).valid.params.channelId as string;
    const list = `messages:${channelId}`;
    const page = listRequest<unknown>(req, res, list);
    // A read authenticated from memory confirms that authentication in its statement (remembered-auth.ts).
    const read = await runConfirmingAuthentication(req, res, actorOf(res), (actor, confirm) => listMessages(depsOf(req).database.db, {
      actor, channelId, page: { limit: page.limit, after: tsKeyset(page.after) }, confirm,
    }));
    sendPageText(req, res, list, read.data, read.nextKeyset === null ? null : [read.nextKeyset]);
  },

  // The post is one statement (post-message.ts): no transaction unless an Idempotency-Key needs
  // one. Its events wake the relay once they have committed (RelayWakeUps).
  // A post authenticated from memory confirms that authentication in its statement (remembered-auth.ts).
  postMessage: creatingAtomic(async ({ db, deps, actor, body, params, req }) => {
    const threadTsMicros = body.thread_ts === undefined ? undefined : parseTs(body.thread_ts, 'thread_ts');
    const row = await runConfirmingAuthentication(req, req.res!, actor, (poster, confirm) => postMessage(db, {
      actor: poster,
      channelId: params.channelId,
      text: body.text,
      attachments: body.attachments,
      links: body.links,
      threadTsMicros,
      clientRef: body.client_ref,
      session: mcpSessionOf(req, poster),
      confirm,
    }));
    return {
      status: 201, body: toMessageView(row), headers: { ETag: etagOf(row.version) },
      afterCommit: async () => deps.relayWakeUps.committed(),
    };
  }),

  editMessage: async (req, res) => {
    const { params, body } = locals(res).valid;
    const ifMatch = ifMatchVersion(req);
    if (ifMatch !== undefined && body.version !== undefined && ifMatch !== body.version) {
      throw new AppError('invalid_request', 'If-Match and the body version disagree; send one of them.', { field: 'version' });
    }
    const row = await outboxTransaction(depsOf(req), (tx) => editMessage(tx, {
      actor: actorOf(res), channelId: params.channelId, tsMicros: parseTs(params.ts),
      expectedVersion: ifMatch ?? body.version, text: body.text, attachments: body.attachments, links: body.links,
    }));
    res.setHeader('ETag', etagOf(row.version));
    res.json(toMessageView(row));
  },

  deleteMessage: async (req, res) => {
    const deps = depsOf(req);
    const { params } = locals(res).valid;
    // The approval is committed first; only then is the caller told to have it confirmed.
    const out = await outboxTransaction(deps, (tx) =>
      requestMessageDelete(tx, { actor: actorOf(res), channelId: params.channelId, tsMicros: parseTs(params.ts), now: deps.now() }));
    if (out.deleted) {
      res.status(204).end();
      return;
    }
    throw new AppError(
      'confirmation_required',
      'Deleting a message through a credential needs a person to confirm it: open approval_url while signed in.',
      { approval_id: out.approval.id, approval_url: `${deps.config.publicWebUrl}/accounts/${out.approval.accountId}/approvals/${out.approval.id}`, expires_at: out.approval.expiresAt.toISOString() },
    );
  },

  readThread: async (req, res) => {
    const { channelId, threadTs } = locals(res).valid.params as { channelId: string; threadTs: string };
    const list = `thread:${channelId}:${threadTs}`;
    const page = listRequest<unknown>(req, res, list);
    const rows = await readThread(depsOf(req).database.db, {
      actor: actorOf(res), channelId, threadTsMicros: parseTs(threadTs, 'threadTs'), page: { limit: page.limit, after: tsKeyset(page.after) },
    });
    sendPage(req, res, list, rows, page.limit, view, keyOf);
  },

  addReaction: async (req, res) => {
    const { channelId, ts, emoji } = locals(res).valid.params as { channelId: string; ts: string; emoji: string };
    const actor = actorOf(res);
    const out = await outboxTransaction(depsOf(req), (tx) => addReaction(tx, { actor, channelId, tsMicros: parseTs(ts), emoji }));
    res.status(out.added ? 201 : 200).json({ channel_id: channelId, ts, emoji, by: actor.identityId });
  },

  removeReaction: async (req, res) => {
    const { channelId, ts, emoji } = locals(res).valid.params as { channelId: string; ts: string; emoji: string };
    await outboxTransaction(depsOf(req), (tx) => removeReaction(tx, { actor: actorOf(res), channelId, tsMicros: parseTs(ts), emoji }));
    res.status(204).end();
  },
} satisfies HandlerMap;
