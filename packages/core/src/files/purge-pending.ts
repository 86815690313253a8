import { and, eq, files, lt, type Executor } from '@teamchat/db';
import { PENDING_FILE_TTL_MS } from './rules';
import type { FileStore } from './storage/store';

/**
 * Removes reservations never completed within 24 h, bytes first (so a crash leaves a row to
 * retry, never bytes without a row), `batch` at a time. A pending file is never attached to a
 * message, so nothing references it. Returns how many were removed.
 */
export async function purgePendingFiles(db: Executor, store: FileStore, now: Date, batch = 100): Promise<number> {
  const cutoff = new Date(now.getTime() - PENDING_FILE_TTL_MS);
  const stale = await db.select({ id: files.id, key: files.storageKey }).from(files)
    .where(and(eq(files.state, 'pending'), lt(files.createdAt, cutoff)))
    .orderBy(files.createdAt)
    .limit(batch);
  let removed = 0;
  for (const f of stale) {
    await store.delete(f.key);
    const gone = await db.delete(files).where(and(eq(files.id, f.id), eq(files.state, 'pending'))).returning({ id: files.id });
    removed += gone.length;
  }
  return removed;
}
