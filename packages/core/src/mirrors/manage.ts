import { and, eq, isNull, mirrorLines, mirrors, sql, type Executor } from '@teamchat/db';
import { recordAudit } from '../audit';
import type { Deps } from '../context';
import { newId } from '../ids';
import { urlOrigin } from '../notifications/notify-admins';
import type { Actor } from '../principal';
import type { MirrorFormat } from './format';
import { loadMirror, type MirrorRow } from './load';
import { dropOpenMirrorSends } from './log';
import { checkMirrorChannels, checkMirrorUrl, claimMirrorPlace } from './rules';

/** What the mirror use cases read besides the transaction: config, clock, and the caller. */
export interface MirrorCall {
  deps: Pick<Deps, 'config' | 'now'>;
  actor: Actor;
}

/**
 * Creates a mirror (routes: web session, owner or admin only). The URL is vetted by the URL
 * guard; the channels must be channels the creator can read; enabled unless `enabled: false`.
 */
export async function createMirror(tx: Executor, input: MirrorCall & { url: string; channels: string[]; format: MirrorFormat; enabled?: boolean }): Promise<MirrorRow> {
  const { deps, actor } = input;
  await checkMirrorUrl(deps.config, input.url);
  const channelIds = await checkMirrorChannels(tx, { accountId: actor.accountId, userId: actor.userId, channelIds: input.channels });
  await claimMirrorPlace(tx, actor.accountId);
  const now = deps.now();
  const enabled = input.enabled !== false;
  const [row] = await tx.insert(mirrors).values({
    id: newId('mirror'), accountId: actor.accountId, createdByUserId: actor.userId, url: input.url, channelIds, format: input.format,
    enabled, disabledReason: enabled ? null : 'manual', enabledAt: enabled ? now : null, disabledAt: enabled ? null : now, createdAt: now, updatedAt: now,
  }).returning();
  await recordAudit(tx, {
    accountId: actor.accountId, action: 'mirror.created', actor, targetType: 'mirror', targetId: row.id,
    data: { url_origin: urlOrigin(row.url), channels: channelIds, format: row.format, enabled },
  });
  return row;
}

/**
 * PATCH: url (vetted again), channels (checked again, against the caller: a mirror never covers
 * a channel the person changing it cannot read), format, enabled. Disabling drops what waits
 * (queued lines, open sends); enabling mirrors messages posted from now on.
 */
export async function updateMirror(
  tx: Executor,
  input: MirrorCall & { mirrorId: string; url?: string; channels?: string[]; format?: MirrorFormat; enabled?: boolean },
): Promise<MirrorRow> {
  const { deps, actor } = input;
  const row = await loadMirror(tx, actor.accountId, input.mirrorId, { forUpdate: true });
  const changes: Partial<typeof mirrors.$inferInsert> = {};
  if (input.url !== undefined && input.url !== row.url) changes.url = await checkMirrorUrl(deps.config, input.url);
  // Whoever points a mirror somewhere else becomes its creator: from then on it carries only the
  // text of channels they read, and its sends are charged to their seat (docs/mirrors.md
  // "Who reads what a mirror sends"); the lines already queued, taken under the old creator's
  // memberships, are dropped.
  const takenOver = changes.url !== undefined && row.createdByUserId !== actor.userId;
  if (takenOver) changes.createdByUserId = actor.userId;
  if (input.channels !== undefined) changes.channelIds = await checkMirrorChannels(tx, { accountId: actor.accountId, userId: actor.userId, channelIds: input.channels });
  if (input.format !== undefined) changes.format = input.format;
  const now = deps.now();
  if (input.enabled === true && !row.enabled) Object.assign(changes, { enabled: true, disabledReason: null, enabledAt: now, disabledAt: null, failingSince: null, nextSendAt: null });
  if (input.enabled === false && row.enabled) Object.assign(changes, { enabled: false, disabledReason: 'manual', disabledAt: now });
  const [updated] = await tx.update(mirrors).set({ ...changes, updatedAt: now }).where(eq(mirrors.id, row.id)).returning();
  if (row.enabled && !updated.enabled) await dropQueued(tx, row.id, 'dropped: mirror disabled (manual)');
  else if (takenOver) await dropQueued(tx, row.id, 'dropped: mirror taken over (url changed by someone other than its creator)');
  await recordAudit(tx, {
    accountId: actor.accountId, action: 'mirror.updated', actor, targetType: 'mirror', targetId: row.id,
    data: {
      fields: (['url', 'channels', 'format', 'enabled'] as const).filter((f) => input[f] !== undefined),
      enabled: { from: row.enabled, to: updated.enabled },
      ...(takenOver ? { created_by: { from: row.createdByUserId, to: actor.userId } } : {}),
    },
  });
  return updated;
}

/** DELETE: sets deleted_at (and enabled false) and drops what waits; the log stays for its 30 days. */
export async function deleteMirror(tx: Executor, input: MirrorCall & { mirrorId: string }): Promise<void> {
  const { deps, actor } = input;
  const row = await loadMirror(tx, actor.accountId, input.mirrorId, { forUpdate: true });
  const now = deps.now();
  await tx.update(mirrors).set({ deletedAt: now, enabled: false, disabledAt: row.enabled ? now : row.disabledAt, updatedAt: now }).where(eq(mirrors.id, row.id));
  await dropQueued(tx, row.id, 'dropped: mirror deleted');
  await recordAudit(tx, { accountId: actor.accountId, action: 'mirror.deleted', actor, targetType: 'mirror', targetId: row.id, data: { url_origin: urlOrigin(row.url) } });
}

/** A disabled or deleted mirror sends nothing more: its queued lines are deleted and its open sends closed `dead`. */
export async function dropQueued(tx: Executor, mirrorId: string, error: string): Promise<void> {
  await tx.delete(mirrorLines).where(eq(mirrorLines.mirrorId, mirrorId));
  await dropOpenMirrorSends(tx, mirrorId, error);
}

/** The account's live mirrors, oldest first, keyset-paged on seq. */
export async function listMirrors(db: Executor, input: { accountId: string; page: { limit: number; after: number | null } }): Promise<MirrorRow[]> {
  return db
    .select()
    .from(mirrors)
    .where(and(eq(mirrors.accountId, input.accountId), isNull(mirrors.deletedAt), input.page.after === null ? undefined : sql`${mirrors.seq} > ${input.page.after}`))
    .orderBy(mirrors.seq)
    .limit(input.page.limit + 1);
}
