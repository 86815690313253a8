import { runStatement, type Executor } from '@teamchat/db';
import { AuthenticationNotConfirmed, type AuthenticationToConfirm } from '../../auth/remembered-authentications';
import { errors } from '../../errors';
import { resolveAttachments } from '../../files/attachments';
import type { Actor } from '../../principal';
import type { Attachment } from '../content';
import { eventRows, messagePostedEvents, type MessageSession } from '../../events';
import { parseMentions } from '../mentions';
import type { MessageRow } from '../views';
import { knownPostFacts, rememberPostFacts } from './post-facts-cache';
import { writePost, type PostWriteInput } from './post-batch';
import { postFacts } from './post-message-sql';

export interface PostMessageInput {
  actor: Actor;
  channelId: string;
  text: string;
  attachments?: Attachment[];
  links?: string[];
  /** the thread to reply in; a reply's ts is taken as its thread's root */
  threadTsMicros?: bigint;
  clientRef?: string;
  session?: MessageSession | null;
  /**
   * A post authenticated from memory: what its statement must find still true before it writes
   * (remembered-authentications.ts); when it does not, nothing is written and
   * AuthenticationNotConfirmed is thrown.
   */
  confirm?: AuthenticationToConfirm;
}

const noAccess = (kind: string) => (kind === 'dm' ? errors.notFound('channel') : errors.notAMember('channel'));
const badThread = () => errors.invalid('thread_ts does not name a message in this channel.', { field: 'thread_ts' });

/** The facts a post is built from (post_message_facts, or what this process already knows of them). */
interface Facts {
  kind: string;
  rootTs: string | null;
  rootAuthor: string | null;
  /** the mentioned ids that are identities of the account */
  mentioned: string[];
  dmMembers: string[];
}

async function readFacts(ex: Executor, actor: Actor, channelId: string, thread: string | null, mentionIds: string[]): Promise<Facts> {
  const [row] = await runStatement(ex, postFacts, [channelId, actor.accountId, actor.identityId, thread, mentionIds]);
  if (!row) throw errors.notFound('channel');
  rememberPostFacts({ accountId: actor.accountId, channelId, kind: row.kind, dmMembers: row.dm_members, mentioned: row.mentioned });
  if (!row.member) throw noAccess(row.kind);
  if (thread !== null && row.root_ts === null) throw badThread();
  return { kind: row.kind, rootTs: row.root_ts, rootAuthor: row.root_author, mentioned: row.mentioned, dmMembers: row.dm_members };
}

/**
 * Posts a message in two statements (docs/performance.md, 'The post path'), on the database or in the caller's transaction:
 *
 * 1. `post_message_facts` (read-only, no lock): the channel's kind, the caller's membership, the
 *    thread's root and its author, which mentioned identities exist, a DM's members; skipped
 *    for a top-level post when the facts it needs (the kind, a DM's members, the mentioned
 *    identities: none of them ever changes) are already known to this process
 *    (post-facts-cache.ts), since membership is checked by the post statement anyway;
 * 2. the rows of the post are built here, by the events module, from those facts; then
 *    `post_message`, ONE statement and so atomic on its own: it allocates the ts under the
 *    channel row's lock (membership checked again in the same UPDATE), bumps the root's reply
 *    count, inserts the message and its event rows (only their `ts` is filled in by SQL). The
 *    outbox rows commit with the message or not at all, and the lock is held to commit, so ts
 *    order is commit order. A top-level post outside a transaction is written together with
 *    the other posts that reach their write in the same event-loop turn, in one statement with
 *    the same checks per post (post-batch.ts).
 *
 * Events: exactly one message.posted; thread.replied for a reply; one mention per mentioned
 * identity (not the author) or one broadcast mention; dm.received per other DM member.
 */
export async function postMessage(ex: Executor, input: PostMessageInput): Promise<MessageRow> {
  const { actor, channelId } = input;
  const parsed = parseMentions(input.text);
  const thread = input.threadTsMicros === undefined ? null : input.threadTsMicros.toString();
  // A top-level post whose facts are all known (and immutable) skips the read; membership is
  // checked by the post statement either way.
  const known = thread === null ? knownPostFacts(actor.accountId, channelId, parsed.identityIds) : undefined;
  const facts: Facts = known
    ? { kind: known.kind, rootTs: null, rootAuthor: null, mentioned: parsed.identityIds, dmMembers: known.dmMembers }
    : await readFacts(ex, actor, channelId, thread, parsed.identityIds);
  // File attachments are checked and described from their files (no query without one).
  const attachments = await resolveAttachments(ex, actor, input.attachments);

  // Keep the order of first appearance in the text.
  const mentions = facts.mentioned.length === parsed.identityIds.length
    ? parsed.identityIds
    : parsed.identityIds.filter((id) => facts.mentioned.includes(id));
  const draft: MessageRow = {
    channelId,
    tsMicros: BigInt(0), // allocated by the statement, which also writes it into the events' `ts`
    accountId: actor.accountId,
    authorIdentityId: actor.identityId,
    text: input.text,
    attachments: attachments ?? [],
    links: input.links ?? [],
    threadTsMicros: facts.rootTs === null ? null : BigInt(facts.rootTs),
    replyCount: 0,
    mentions,
    broadcast: parsed.broadcast !== null,
    version: 1,
    clientRef: input.clientRef ?? null,
    session: input.session ?? null,
    createdAt: new Date(0),
    editedAt: null,
  };
  const rows = eventRows(messagePostedEvents({
    message: draft, kind: facts.kind, parentAuthor: facts.rootAuthor, broadcast: parsed.broadcast,
    dmRecipients: facts.dmMembers.filter((id) => id !== actor.identityId),
  }));

  const write: PostWriteInput = {
    channelId, accountId: actor.accountId, authorId: actor.identityId, text: draft.text,
    attachments: JSON.stringify(draft.attachments), links: JSON.stringify(draft.links), mentions, broadcast: draft.broadcast,
    clientRef: draft.clientRef, session: draft.session === null ? null : JSON.stringify(draft.session),
    events: JSON.stringify(rows.map((r) => [r.id, r.type, r.channelId, r.data])), confirm: input.confirm,
  };
  const out = await writePost(ex, write, facts.rootTs);
  if (!out.authenticated) throw new AuthenticationNotConfirmed();
  if (!out.locked) {
    // No ts taken: not a member (the facts say which error, read now if they were known).
    if (known) await readFacts(ex, actor, channelId, thread, parsed.identityIds);
    throw noAccess(facts.kind);
  }
  // A ts but no message: the thread's root went away since the facts were read (the channel's
  // counter moved; nothing else was written).
  if (out.ts_micros === null) throw badThread();
  return {
    ...draft,
    tsMicros: BigInt(out.ts_micros),
    attachments: out.attachments,
    links: out.links,
    session: out.session,
    createdAt: out.created_at as Date,
  };
}

export { forgetPostFacts } from './post-facts-cache';
