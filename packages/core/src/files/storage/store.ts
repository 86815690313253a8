import type { Readable } from 'node:stream';
import type { Config } from '../../config';

/** Where the client sends a file's bytes: `method` PUT to `url` with `headers`. */
export interface UploadTarget {
  url: string;
  headers: Record<string, string>;
}

export interface PresignInput {
  key: string;
  fileId: string;
  accountId: string;
  size: number;
  contentType: string;
  expiresAt: Date;
}

/**
 * The ONE storage interface (docs/api.md "Files"): bytes by key. Keys are made by the files
 * module (`storageKeyOf`), never from user input.
 */
export interface FileStore {
  readonly driver: 'local' | 's3';
  /** Stores exactly `size` bytes from `body`; rejects (and keeps nothing) when the stream has another length. */
  put(key: string, body: Readable, size: number): Promise<void>;
  /** The bytes, or null when there are none under the key. */
  get(key: string): Promise<Readable | null>;
  /** The stored size, or null when there are no bytes under the key. */
  head(key: string): Promise<{ size: number } | null>;
  /** Removes the bytes; no error when there are none. */
  delete(key: string): Promise<void>;
  /** A URL that accepts one PUT of exactly `size` bytes until `expiresAt`. */
  presignPut(input: PresignInput): Promise<UploadTarget>;
}

/** Thrown by `put` when the body is longer or shorter than announced. */
export class SizeMismatchError extends Error {
  constructor(readonly expected: number, readonly received: number) {
    super(`expected ${expected} bytes, received ${received}${received > expected ? ' or more' : ''}`);
  }
}

/** Where a file's bytes live: account, then file id (both generated, never user input). */
export function storageKeyOf(accountId: string, fileId: string): string {
  return `${accountId}/${fileId}`;
}

const stores = new WeakMap<object, FileStore>();

/**
 * The process's store for this configuration (one per config object: the S3 client keeps a
 * connection pool). The drivers are loaded on first use, so a process that never touches files
 * never loads the S3 SDK.
 */
export function fileStoreFor(config: Readonly<Config>): FileStore {
  let store = stores.get(config);
  if (!store) {
    store = config.filesDriver === 's3'
      ? new (require('./s3') as typeof import('./s3')).S3FileStore(config)
      : new (require('./local') as typeof import('./local')).LocalFileStore(config);
    stores.set(config, store);
  }
  return store;
}
