import type { Readable } from 'node:stream';
import { eq, files, type Executor } from '@teamchat/db';
import { accountStateError, requireAccount } from '../accounts/accounts';
import { AppError, errors } from '../errors';
import { SizeMismatchError, type FileStore } from './storage/store';
import { verifyUpload } from './upload-token';

export interface AcceptUploadInput {
  fileId: string;
  /** the URL's `expires` (unix seconds) and `signature` */
  expires: number;
  signature: string;
  /** the request's Content-Length, when it sent one */
  contentLength: number | undefined;
  body: Readable;
  secretsKey: string;
  now: Date;
}

const badUrl = () => new AppError('forbidden', 'This upload URL is not valid.', { reason: 'invalid_upload_url' });
const sizeMismatch = (expected: number) =>
  errors.invalid(`The body must be exactly ${expected} bytes, the size reserved for this file.`, { reason: 'size_mismatch', field: 'Content-Length' });

/**
 * Step 2 for the local driver: the PUT to the signed upload URL (no cookie, no credential: the
 * URL is the permission, for one file, one size, until it expires). Exactly the reserved number
 * of bytes is stored; a body of another length is refused and nothing is kept. While the file is
 * pending the URL may be used again (a retried upload replaces the bytes), as an S3 presigned PUT.
 * The URL lives outside /accounts/{id} but acts in the file's account, so that account's state
 * is checked as on every route under it: read-only or suspended stores nothing (spec: Account states).
 */
export async function acceptUpload(db: Executor, store: FileStore, input: AcceptUploadInput): Promise<void> {
  const [file] = await db.select().from(files).where(eq(files.id, input.fileId));
  if (!file || !verifyUpload(input.secretsKey, { fileId: file.id, accountId: file.accountId, size: file.size, expires: input.expires }, input.signature)) {
    throw badUrl();
  }
  if (input.expires * 1000 <= input.now.getTime()) {
    throw new AppError('forbidden', 'This upload URL has expired; reserve the upload again.', { reason: 'upload_url_expired' });
  }
  const stateError = accountStateError((await requireAccount(db, file.accountId)).state);
  if (stateError) throw stateError;
  if (file.state !== 'pending') {
    throw errors.invalid('This file is already complete; its bytes cannot change.', { reason: 'not_pending' });
  }
  if (input.contentLength !== undefined && input.contentLength !== file.size) throw sizeMismatch(file.size);
  try {
    await store.put(file.storageKey, input.body, file.size);
  } catch (err) {
    if (err instanceof SizeMismatchError) throw sizeMismatch(file.size);
    throw err;
  }
}
