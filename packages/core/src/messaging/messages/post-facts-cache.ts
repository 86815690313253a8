import { rememberBounded } from '../../bounded-memo';

/**
 * The facts of a post that never change once written, remembered by this process so that most
 * posts need no read before their write (two round trips instead of three: docs/performance.md, 'The post path'):
 * - a channel's account and kind, and a DM's members (fixed when the DM is opened: docs/api.md
 *   "Direct messages"; channels are never deleted);
 * - the account of an identity (identities are never deleted nor moved).
 * Only what `post_message_facts` returned is remembered, so a hit answers exactly what the
 * statement would. Membership and thread roots are never taken from here: the post statement
 * checks membership under the channel lock, and a reply always reads its root.
 * If any of these rules changes (leaving a DM, deleting identities), this cache must go.
 */
const MAX_ENTRIES = 20_000;

interface ChannelFacts {
  accountId: string;
  kind: string;
  /** a DM's members in the order they were added; null for a channel */
  dmMembers: string[] | null;
}

const channels = new Map<string, ChannelFacts>();
const identityAccounts = new Map<string, string>();


export function rememberPostFacts(input: {
  accountId: string; channelId: string; kind: string; dmMembers: string[]; mentioned: string[];
}): void {
  rememberBounded(channels, MAX_ENTRIES, input.channelId, { accountId: input.accountId, kind: input.kind, dmMembers: input.kind === 'dm' ? input.dmMembers : null });
  for (const id of input.mentioned) rememberBounded(identityAccounts, MAX_ENTRIES, id, input.accountId);
}

/**
 * What the facts statement would answer for a top-level post, if all of it is known: the kind,
 * a DM's members and the mentioned ids that are identities of the account. Undefined: read them.
 */
export function knownPostFacts(accountId: string, channelId: string, mentionIds: string[]): { kind: string; dmMembers: string[] } | undefined {
  const ch = channels.get(channelId);
  if (!ch || ch.accountId !== accountId) return undefined;
  for (const id of mentionIds) if (identityAccounts.get(id) !== accountId) return undefined;
  return { kind: ch.kind, dmMembers: ch.dmMembers ?? [] };
}

/** Tests: start cold. */
export function forgetPostFacts(): void {
  channels.clear();
  identityAccounts.clear();
}
