import { createHash } from 'node:crypto';
import { and, eq, files, type Executor } from '@teamchat/db';
import { fromBuffer } from 'file-type';
import { errors } from '../errors';
import type { Actor } from '../principal';
import { storedContentType } from './rules';
import type { FileStore } from './storage/store';
import type { FileRow } from './views';

/** What file-type needs to recognise a format (its own figure). */
const SNIFF_BYTES = 4100;

/** Reads the bytes once: their SHA-256 and their first bytes for sniffing. */
async function digest(store: FileStore, key: string): Promise<{ sha256: string; head: Buffer }> {
  const body = await store.get(key);
  if (!body) throw errors.invalid('No bytes were received for this file: PUT them to the upload URL first.', { reason: 'upload_missing' });
  const hash = createHash('sha256');
  const head: Buffer[] = [];
  let headBytes = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    hash.update(chunk);
    if (headBytes < SNIFF_BYTES) {
      head.push(chunk.subarray(0, SNIFF_BYTES - headBytes));
      headBytes += Math.min(chunk.length, SNIFF_BYTES - headBytes);
    }
  }
  return { sha256: hash.digest('hex'), head: Buffer.concat(head) };
}

/**
 * Step 3 (docs/api.md "Files"): the uploader confirms the bytes are in place. The stored size
 * must be the reserved one (else the bytes are removed, the file stays pending and the same URL
 * may be used again); the SHA-256 is computed and the content type decided from the first bytes
 * (rules.ts storedContentType). Completing a ready file answers it unchanged.
 */
export async function completeUpload(db: Executor, store: FileStore, input: { actor: Actor; fileId: string; now: Date }): Promise<FileRow> {
  const { actor } = input;
  const [file] = await db.select().from(files).where(and(
    eq(files.id, input.fileId), eq(files.accountId, actor.accountId), eq(files.uploadedByIdentityId, actor.identityId),
  ));
  if (!file) throw errors.notFound('file');
  if (file.state === 'ready') return file;
  const stored = await store.head(file.storageKey);
  if (!stored) throw errors.invalid('No bytes were received for this file: PUT them to the upload URL first.', { reason: 'upload_missing' });
  if (stored.size !== file.size) {
    await store.delete(file.storageKey);
    throw errors.invalid(`The upload had ${stored.size} bytes, not the ${file.size} reserved; it was discarded, PUT it again.`, {
      reason: 'size_mismatch',
    });
  }
  const { sha256, head } = await digest(store, file.storageKey);
  const sniffed = (await fromBuffer(head))?.mime;
  const [ready] = await db.update(files)
    .set({ state: 'ready', sha256, contentType: storedContentType(file.contentType, sniffed), completedAt: input.now })
    .where(and(eq(files.id, file.id), eq(files.state, 'pending')))
    .returning();
  if (ready) return ready;
  // completed concurrently: answer what that completion stored; abandoned concurrently: gone
  const [now] = await db.select().from(files).where(eq(files.id, file.id));
  if (!now) throw errors.notFound('file');
  return now;
}
