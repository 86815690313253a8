import { eq, files, sql, type Executor } from '@teamchat/db';
import { requireAccount } from '../accounts/accounts';
import type { Config } from '../config';
import { AppError, errors } from '../errors';
import { newId } from '../ids';
import type { Plan } from '../plans';
import type { Actor } from '../principal';
import { UPLOAD_URL_TTL_MS } from './rules';
import { storageKeyOf, type FileStore, type UploadTarget } from './storage/store';
import type { FileRow } from './views';

export interface ReserveUploadInput {
  actor: Actor;
  name: string;
  size: number;
  contentType: string;
  now: Date;
}

/** Bytes of the account's files, pending reservations included: what the storage quota counts. */
export async function storageUsed(db: Executor, accountId: string): Promise<number> {
  const [row] = await db.select({ used: sql<string>`coalesce(sum(${files.size}), 0)::text` }).from(files).where(eq(files.accountId, accountId));
  return Number(row.used);
}

/**
 * Step 1 of an upload (docs/api.md "Files"): a pending file and where to PUT its bytes. The size
 * is checked against the plan's file size limit and the account's storage quota; a
 * transaction-scoped advisory lock per account serialises reservations, so concurrent ones never
 * pass the quota together (as the webhook endpoint budget does).
 */
export async function reserveUpload(
  tx: Executor,
  config: Pick<Config, 'planLimits'>,
  store: FileStore,
  input: ReserveUploadInput,
): Promise<{ file: FileRow; upload: UploadTarget & { expiresAt: Date } }> {
  const { actor } = input;
  const account = await requireAccount(tx, actor.accountId);
  const limits = config.planLimits[account.plan as Plan];
  if (input.size > limits.fileBytes) {
    throw errors.invalid(`size: a file may have at most ${limits.fileBytes} bytes on the ${account.plan} plan.`, {
      field: 'size', limit: limits.fileBytes,
    });
  }
  await tx.execute(sql`SELECT pg_advisory_xact_lock(hashtextextended(${`files:${actor.accountId}`}, 0))`);
  const used = await storageUsed(tx, actor.accountId);
  if (used + input.size > limits.storageBytes) {
    throw new AppError(
      'budget_exceeded',
      `This file would take the account's storage past its limit (${limits.storageBytes} bytes on the ${account.plan} plan, ${used} used).`,
      { scope: 'storage_bytes', budget: { limit: limits.storageBytes, used, resets_at: null } },
    );
  }
  const id = newId('file');
  const [file] = await tx.insert(files).values({
    id,
    accountId: actor.accountId,
    uploadedByIdentityId: actor.identityId,
    name: input.name,
    size: input.size,
    contentType: input.contentType,
    state: 'pending',
    storageKey: storageKeyOf(actor.accountId, id),
    createdAt: input.now,
  }).returning();
  const expiresAt = new Date(input.now.getTime() + UPLOAD_URL_TTL_MS);
  const target = await store.presignPut({
    key: file.storageKey, fileId: id, accountId: actor.accountId, size: input.size, contentType: input.contentType, expiresAt,
  });
  return { file, upload: { ...target, expiresAt } };
}
