import { outsideTransaction, runStatement, type Executor } from '@teamchat/db';
import { confirmParams, type AuthenticationToConfirm } from '../../auth/remembered-authentications';
import { postWrite, postWriteBatch, type PostWritten } from './post-message-sql';

/** One top-level post's write, as post-message.ts has built it (its facts read, its rows made). */
export interface PostWriteInput {
  channelId: string;
  accountId: string;
  authorId: string;
  text: string;
  /** JSON texts */
  attachments: string;
  links: string;
  mentions: string[];
  broadcast: boolean;
  clientRef: string | null;
  session: string | null;
  /** JSON text of the event rows, `[[id, type, channel_id, data], …]` */
  events: string;
  confirm?: AuthenticationToConfirm;
}

/** `post_message`'s parameters for one post (`rootTs`: the thread's root for a reply, µs). */
function postWriteParams(w: PostWriteInput, rootTs: string | null): unknown[] {
  return [
    w.channelId, w.accountId, w.authorId, rootTs, w.text, w.attachments, w.links, w.mentions, w.broadcast,
    w.clientRef, w.session, w.events, ...confirmParams(w.confirm),
  ];
}

/** `post_message_batch`'s parameters: one array per column, one element per post. */
function batchParams(writes: PostWriteInput[]): unknown[] {
  const column = <T>(f: (w: PostWriteInput) => T) => writes.map(f);
  const confirms = writes.map((w) => confirmParams(w.confirm));
  return [
    column((w) => w.channelId), column((w) => w.accountId), column((w) => w.authorId), column((w) => w.text),
    column((w) => w.attachments), column((w) => w.links), column((w) => JSON.stringify(w.mentions)),
    column((w) => w.broadcast), column((w) => w.clientRef), column((w) => w.session), column((w) => w.events),
    ...[0, 1, 2, 3, 4, 5].map((k) => confirms.map((c) => c[k])),
  ];
}

async function writeOnePost(ex: Executor, w: PostWriteInput, rootTs: string | null = null): Promise<PostWritten> {
  const [out] = await runStatement(ex, postWrite, postWriteParams(w, rootTs));
  return out;
}

interface Waiting {
  write: PostWriteInput;
  resolve: (out: PostWritten) => void;
  reject: (error: unknown) => void;
}

/**
 * Whether a failed batch statement surely rolled back, so that writing its posts again cannot
 * post one twice: PostgreSQL answered an error of the statement itself. Not after a lost
 * connection (no SQLSTATE, or class 08), an operator's or the system's intervention (57, 58, XX;
 * but 57014, a cancelled statement, ends before its commit): the batch may have committed.
 */
export function surelyRolledBack(error: unknown): boolean {
  // An ErrorResponse from PostgreSQL (pg's DatabaseError) has a severity and a SQLSTATE; node's
  // socket errors have neither a severity nor a SQLSTATE (EPIPE is five letters, not a SQLSTATE).
  const { code, severity } = (error ?? {}) as { code?: unknown; severity?: unknown };
  if (typeof severity !== 'string' || typeof code !== 'string' || !/^[0-9A-Z]{5}$/.test(code)) return false;
  if (code === '57014') return true;
  return !['08', '57', '58', 'XX'].includes(code.slice(0, 2));
}

/**
 * At most this many posts in one statement: a turn of a very busy process is cut into batches of
 * this size, which go side by side, so no one statement's parameters or lock hold grow without bound.
 */
export const MAX_POSTS_PER_BATCH = 100;

/**
 * The top-level posts a process writes outside a transaction, batched by event-loop turn and
 * account (docs/performance.md "Posts of one turn in one statement"): the posts of one account
 * that reach their write in one turn go to PostgreSQL at the turn's end (`setImmediate`) as one
 * statement, one socket write and one commit for all of them, instead of one each. A turn with
 * one post of an account sends `post_message` as before. Batches never wait for each other (each
 * takes its own pool connection), and nothing waits on a timer: on a quiet process a post waits
 * only for the end of its own turn.
 *
 * By account, because a batch holds its channels' queue locks together until it commits: a post
 * waits for every channel of its batch, so a batch never mixes accounts and one account's busy
 * channel never holds up another account's post.
 *
 * Each post's outcome is its own: a post whose checks fail writes nothing and answers as alone
 * (`post_message_batch`). If PostgreSQL refuses the batch statement as a whole (a deadlock, a
 * constraint, a trigger), nothing of it was written, and each post is written again by itself,
 * so one post's error is never another's. A lost connection fails the batch's posts as it fails
 * a lone post: the batch may have committed (`surelyRolledBack`).
 *
 * Not the delivery engine's `Coalescer` (packages/delivery/src/coalesce.ts): it batches by turn
 * too, but runs one batch at a time (items that come while one is under way wait for it and go
 * in the next). A post must not wait for another batch's commit, so these batches go side by side.
 */
class TurnPosts {
  private waiting = new Map<string, Waiting[]>();

  constructor(private readonly db: Executor) {}

  write(write: PostWriteInput): Promise<PostWritten> {
    return new Promise<PostWritten>((resolve, reject) => {
      if (this.waiting.size === 0) setImmediate(() => this.sendAll());
      const batch = this.waiting.get(write.accountId);
      if (batch) batch.push({ write, resolve, reject });
      else this.waiting.set(write.accountId, [{ write, resolve, reject }]);
    });
  }

  private sendAll(): void {
    const batches = [...this.waiting.values()];
    this.waiting = new Map();
    for (const batch of batches) {
      for (let i = 0; i < batch.length; i += MAX_POSTS_PER_BATCH) this.send(batch.slice(i, i + MAX_POSTS_PER_BATCH));
    }
  }

  private send(batch: Waiting[]): void {
    if (batch.length === 1) {
      writeOnePost(this.db, batch[0].write).then(batch[0].resolve, batch[0].reject);
      return;
    }
    runStatement(this.db, postWriteBatch, batchParams(batch.map((b) => b.write))).then(
      (rows) => batch.forEach((b, i) => b.resolve(rows[i])),
      (error: unknown) => {
        const again = surelyRolledBack(error);
        for (const b of batch) {
          if (again) writeOnePost(this.db, b.write).then(b.resolve, b.reject);
          else b.reject(error);
        }
      },
    );
  }
}

/** One batcher per database handle (a process has one per pool). */
const batchers = new WeakMap<object, TurnPosts>();

/**
 * Writes one post: a top-level post on the database (not inside a transaction) with the other
 * posts of its account and turn; a reply (`rootTs`: its root's count moves too) or a post inside a
 * transaction by itself, with `post_message`.
 */
export function writePost(ex: Executor, write: PostWriteInput, rootTs: string | null): Promise<PostWritten> {
  if (rootTs !== null || !outsideTransaction(ex)) return writeOnePost(ex, write, rootTs);
  let batcher = batchers.get(ex);
  if (!batcher) {
    batcher = new TurnPosts(ex);
    batchers.set(ex, batcher);
  }
  return batcher.write(write);
}
