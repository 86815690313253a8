import type { Readable } from 'node:stream';
import { and, desc, eq, files, lt, type Executor } from '@teamchat/db';
import { errors } from '../errors';
import type { Actor } from '../principal';
import type { FileStore } from './storage/store';
import type { FileRow } from './views';
import { fileVisibleTo } from './visibility';

/**
 * The files the caller may see (visibility.ts), newest first; keyset on seq. `limit + 1` rows
 * (the list helper's convention).
 */
export function listFiles(db: Executor, input: { actor: Actor; limit: number; after: number | null }): Promise<FileRow[]> {
  const { actor } = input;
  return db.select().from(files)
    .where(and(
      eq(files.accountId, actor.accountId),
      fileVisibleTo(actor.identityId),
      input.after === null ? undefined : lt(files.seq, input.after),
    ))
    .orderBy(desc(files.seq))
    .limit(input.limit + 1);
}

/** One file the caller may see; 404 not_found for anyone else (and for another account's file). */
export async function getFile(db: Executor, input: { actor: Actor; fileId: string }): Promise<FileRow> {
  const [file] = await db.select().from(files).where(and(
    eq(files.id, input.fileId), eq(files.accountId, input.actor.accountId), fileVisibleTo(input.actor.identityId),
  ));
  if (!file) throw errors.notFound('file');
  return file;
}

/** A ready file's bytes, for a caller who may see it; a pending file has none to give (404). */
export async function readFileContent(db: Executor, store: FileStore, input: { actor: Actor; fileId: string }): Promise<{ file: FileRow; body: Readable }> {
  const file = await getFile(db, input);
  if (file.state !== 'ready') throw errors.notFound('file');
  const body = await store.get(file.storageKey);
  if (!body) throw errors.notFound('file');
  return { file, body };
}
