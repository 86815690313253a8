import { and, channelMembers, channels, eq, identities, inArray, isNull, mirrors, sql, type Executor } from '@teamchat/db';
import type { Config } from '../config';
import { AppError, errors } from '../errors';
import { vetWebhookUrl } from '../webhooks/url-guard';

/** Sizes of a mirror's fields, and the mirrors an account may have (docs/mirrors.md "Limits"). */
export const MIRROR_LIMITS = {
  urlMaxLength: 2048,
  maxChannels: 100,
  perAccount: 20,
} as const;

/** Why a mirror is disabled: by a person, or automatically (410 Gone; every send failed for 24 h). */
export type MirrorDisabledReason = 'manual' | 'gone' | 'failing';

/**
 * The URL guard at registration and on every URL change (the webhooks' guard: https, public
 * addresses only, WEBHOOK_ALLOWED_HOSTS for tests): a refusal is 400 invalid_request, field `url`.
 */
export async function checkMirrorUrl(config: Pick<Config, 'webhookAllowedHosts'>, url: string): Promise<string> {
  await vetWebhookUrl(url, { allowedHosts: config.webhookAllowedHosts });
  return url;
}

/**
 * `channels`: regular channels of this account that the creator can read (their person
 * identity is a member). Only channels are mirrored, never DMs: a DM the creator is in is 400
 * `dm_not_allowed`; an id that is not a channel of the account, or a DM of others, is 400
 * `unknown_channel` (a DM someone else is in does not exist for the caller); a channel the
 * creator is not a member of is 400 `not_a_member`. Each names the field and the ids.
 */
export async function checkMirrorChannels(db: Executor, input: { accountId: string; userId: string; channelIds: readonly string[] }): Promise<string[]> {
  const ids = [...new Set(input.channelIds)];
  const found = await db
    .select({ id: channels.id, kind: channels.kind, member: sql<boolean>`${channelMembers.identityId} IS NOT NULL` })
    .from(channels)
    .leftJoin(identities, and(eq(identities.accountId, channels.accountId), eq(identities.userId, input.userId), eq(identities.kind, 'person')))
    .leftJoin(channelMembers, and(eq(channelMembers.channelId, channels.id), eq(channelMembers.identityId, identities.id)))
    .where(and(eq(channels.accountId, input.accountId), inArray(channels.id, ids)));
  const byId = new Map(found.map((r) => [r.id, r]));
  const refuse = (reason: string, message: string, which: string[]): never => {
    throw errors.invalid(message, { field: 'channels', reason, channel_ids: which });
  };
  const unknown = ids.filter((id) => !byId.has(id) || (byId.get(id)!.kind === 'dm' && !byId.get(id)!.member));
  if (unknown.length > 0) refuse('unknown_channel', `Unknown channel: ${unknown[0]}.`, unknown);
  const dms = ids.filter((id) => byId.get(id)!.kind === 'dm');
  if (dms.length > 0) refuse('dm_not_allowed', `A mirror covers channels only, never direct messages: ${dms[0]} is a DM.`, dms);
  const unread = ids.filter((id) => !byId.get(id)!.member);
  if (unread.length > 0) refuse('not_a_member', `You can only mirror channels you are a member of: ${unread[0]}.`, unread);
  return ids;
}

/**
 * The per-account count of live mirrors, claimed under a transaction-scoped advisory lock (as
 * the webhook endpoints' count): over it, 429 budget_exceeded with `budget {limit, used, resets_at: null}`.
 */
export async function claimMirrorPlace(tx: Executor, accountId: string): Promise<void> {
  await tx.execute(sql`SELECT pg_advisory_xact_lock(hashtextextended(${`mirrors:${accountId}`}, 0))`);
  const [row] = await tx
    .select({ n: sql<number>`count(*)::int` })
    .from(mirrors)
    .where(and(eq(mirrors.accountId, accountId), isNull(mirrors.deletedAt)));
  const limit = MIRROR_LIMITS.perAccount;
  if (row.n >= limit) {
    throw new AppError('budget_exceeded', `This account has ${row.n} mirrors, its limit; delete one first.`, {
      scope: 'mirrors_per_account', budget: { limit, used: row.n, resets_at: null },
    });
  }
}
