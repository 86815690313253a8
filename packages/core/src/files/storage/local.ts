import { createWriteStream, promises as fs } from 'node:fs';
import path from 'node:path';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Config } from '../../config';
import { randomIdToken } from '../../ids';
import { signUpload } from '../upload-token';
import { SizeMismatchError, type FileStore, type PresignInput, type UploadTarget } from './store';

/** Passes at most `size` bytes; fails as soon as there are more, and at the end if there were fewer. */
export function exactLength(size: number): Transform {
  let seen = 0;
  return new Transform({
    transform(chunk: Buffer, _enc, done) {
      seen += chunk.length;
      if (seen > size) done(new SizeMismatchError(size, seen));
      else done(null, chunk);
    },
    flush(done) {
      done(seen === size ? null : new SizeMismatchError(size, seen));
    },
  });
}

/**
 * Files on local disk under FILES_DIR (the default; one machine, or a shared volume). Uploads go
 * to the web host's /uploads/{fileId} route with a signed token (upload-token.ts), the same flow
 * as an S3 presigned PUT. Bytes are written to a temporary name and renamed, so a reader never
 * sees half a file.
 */
export class LocalFileStore implements FileStore {
  readonly driver = 'local' as const;
  private readonly dir: string;

  constructor(private readonly config: Readonly<Config>) {
    this.dir = config.filesDir;
  }

  private pathOf(key: string): string {
    // Keys are generated (`acct_…/file_…`); refuse anything that could leave the directory.
    if (!/^[a-z0-9_]+\/[a-z0-9_]+$/.test(key)) throw new Error(`invalid storage key ${key}`);
    return path.join(this.dir, key);
  }

  async put(key: string, body: Readable, size: number): Promise<void> {
    const target = this.pathOf(key);
    await fs.mkdir(path.dirname(target), { recursive: true });
    const temp = `${target}.part-${randomIdToken(8)}`;
    try {
      await pipeline(body, exactLength(size), createWriteStream(temp, { flags: 'wx', mode: 0o600 }));
      await fs.rename(temp, target);
    } catch (err) {
      await fs.rm(temp, { force: true });
      throw err;
    }
  }

  async get(key: string): Promise<Readable | null> {
    const file = this.pathOf(key);
    try {
      // opened first, so a missing file is null here rather than an error on the stream
      const handle = await fs.open(file, 'r');
      return handle.createReadStream({ autoClose: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    }
  }

  async head(key: string): Promise<{ size: number } | null> {
    try {
      return { size: (await fs.stat(this.pathOf(key))).size };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    }
  }

  async delete(key: string): Promise<void> {
    await fs.rm(this.pathOf(key), { force: true });
  }

  async presignPut(input: PresignInput): Promise<UploadTarget> {
    const expires = Math.floor(input.expiresAt.getTime() / 1000);
    const signature = signUpload(this.config.secretsKey, { fileId: input.fileId, accountId: input.accountId, size: input.size, expires });
    const url = `${this.config.publicWebUrl}/uploads/${input.fileId}?expires=${expires}&signature=${signature}`;
    return { url, headers: { 'Content-Type': input.contentType } };
  }
}
