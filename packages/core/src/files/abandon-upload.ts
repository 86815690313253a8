import { and, eq, files, type Executor } from '@teamchat/db';
import { errors } from '../errors';
import type { Actor } from '../principal';
import type { FileStore } from './storage/store';

/**
 * The uploader gives up a pending upload (docs/api.md "Files"): the reservation and any bytes
 * that arrived go at once, so they stop counting against the account's storage and the file
 * leaves the uploader's list, rather than waiting 24 hours for the maintenance pass. Only the
 * uploader, only while pending: a completed file is no longer an upload (`400 invalid_request`,
 * `not_pending`).
 *
 * The row goes first, in one statement that a completion at the same moment cannot cross (both
 * change the row only while it is pending): either the completion came first (`not_pending`), or
 * it finds the file gone (`404`), never a ready file without its bytes. The bytes go next; a crash
 * between the two leaves bytes no row names, which no one can read or be charged for.
 */
export async function abandonUpload(db: Executor, store: FileStore, input: { actor: Actor; fileId: string }): Promise<void> {
  const { actor } = input;
  const mine = and(eq(files.id, input.fileId), eq(files.accountId, actor.accountId), eq(files.uploadedByIdentityId, actor.identityId));
  const [gone] = await db.delete(files).where(and(mine, eq(files.state, 'pending'))).returning({ key: files.storageKey });
  if (gone) {
    await store.delete(gone.key);
    return;
  }
  const [file] = await db.select({ state: files.state }).from(files).where(mine);
  if (!file) throw errors.notFound('file');
  throw errors.invalid('This file is complete: it is no longer an upload to abandon.', { reason: 'not_pending' });
}
