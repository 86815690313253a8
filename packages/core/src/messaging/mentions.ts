/**
 * Mentions in message text: `<@idn_...>` names a person's or agent's identity; `<!channel>`
 * and `<!here>` are broadcasts. Parsed at write time and stored with the message.
 */
const IDENTITY_MENTION = /<@(idn_[a-z0-9]{1,64})>/g;
const BROADCAST = /<!(channel|here)>/g;

/** At most this many distinct identities are taken from one text; further ones are ignored. */
export const MAX_MENTIONS = 50;

/**
 * At most this many distinct identities' mentions raise a `mention` event per post (docs/api.md
 * "Mentions"): one post must not fan out into more deliveries on other seats than this. The post
 * still succeeds and keeps every mention (up to MAX_MENTIONS); the first ones in text order, not
 * counting the author, get events, the rest do not.
 */
export const MENTION_EVENTS_MAX = 20;

/** Who gets a `mention` event for a post: its mentioned identities in text order, minus the author, at most MENTION_EVENTS_MAX. */
export function mentionEventRecipients(mentions: readonly string[], authorIdentityId: string): string[] {
  const out: string[] = [];
  for (const id of mentions) {
    if (out.length >= MENTION_EVENTS_MAX) break;
    if (id !== authorIdentityId) out.push(id);
  }
  return out;
}

export interface ParsedMentions {
  identityIds: string[];
  /** `channel` / `here` if the text broadcasts, else null (`channel` wins if both appear) */
  broadcast: 'channel' | 'here' | null;
}

export function parseMentions(text: string): ParsedMentions {
  const ids = new Set<string>();
  for (const m of text.matchAll(IDENTITY_MENTION)) {
    if (ids.size >= MAX_MENTIONS) break;
    ids.add(m[1]);
  }
  let broadcast: ParsedMentions['broadcast'] = null;
  for (const m of text.matchAll(BROADCAST)) {
    if (m[1] === 'channel') { broadcast = 'channel'; break; }
    broadcast = 'here';
  }
  return { identityIds: [...ids], broadcast };
}
