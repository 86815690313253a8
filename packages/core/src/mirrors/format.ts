/**
 * The mirror's message formats (docs/mirrors.md "Formats"): pure functions from waiting lines to
 * the JSON bodies POSTed to the other tool's incoming-webhook URL.
 *
 * A line names the channel and the author, then the text as posted. Everything in it (channel
 * and author names included) is neutralised so the mirror never pings anyone on the other side:
 * - every `@` before a word character gets a zero-width space after it (`@here`, `@channel`,
 *   `@everyone`, `@all`, `@someone`: Slack, Mattermost, Rocket.Chat and Discord parse these);
 * - the other tool's own mention syntax is broken the same way (Discord `<@…>`, `<@&…>`, `<#…>`;
 *   Google Chat `<users/…>`; Teams `<at>`), and for Slack `&`, `<`, `>` are escaped as Slack
 *   documents, which turns `<!here>`, `<!channel>`, `<@U…>` into plain text;
 * - Discord bodies also carry `allowed_mentions: {parse: []}`, which makes Discord ping no one
 *   whatever the text holds.
 */
export const MIRROR_FORMATS = ['slack', 'discord', 'google_chat', 'teams'] as const;
export type MirrorFormat = (typeof MIRROR_FORMATS)[number];

/** One message mirrored: what the fan-out stored in the mirror's queue. */
export interface MirrorLine {
  channelName: string;
  authorName: string;
  text: string;
  isReply: boolean;
}

const ZWSP = '\u200B';

/**
 * Characters of text one message holds before waiting lines go into the next message:
 * Discord's hard limit for `content`; for the others a size every receiver takes whole (Slack
 * truncates `text` past 40,000 characters, Google Chat refuses a message above 32,000 bytes,
 * Teams a card above 28 KB), so a merged message stays well below each.
 */
export const MESSAGE_MAX_CHARS: Record<MirrorFormat, number> = { slack: 4000, discord: 2000, google_chat: 4000, teams: 4000 };

/** Slack and Discord `<!here>`, `<@U…>`, `<@&…>`, `<#…>`, `<:emoji:…>`; Google Chat `<users/…>`; Teams `<at>`. */
const BRACKET_MENTION = /<(?=[@#:!&]|users\/|\/?at\b)/gi;

/** `@word` → `@<ZWSP>word`, in every format. */
function breakAtMentions(s: string): string {
  return s.replace(/@(?=[\p{L}\p{N}_])/gu, `@${ZWSP}`);
}

/** The text of a line with everything that could ping neutralised for `format`. */
export function neutralise(format: MirrorFormat, s: string): string {
  let out = breakAtMentions(s);
  if (format === 'slack') {
    // Slack's documented escaping: after it no <…> control sequence remains (Mattermost and
    // Rocket.Chat show the entities as the characters).
    return out.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  }
  // Every tool's angle-bracket mention syntax, broken in every other format (a line mirrored to
  // one tool may quote another tool's syntax, and a mention that pings nowhere costs nothing).
  out = out.replace(BRACKET_MENTION, `<${ZWSP}`);
  return out;
}

/** One line as sent: `[#channel] Author: text` (a thread reply: `[#channel] Author (thread reply): text`). */
export function lineText(format: MirrorFormat, line: MirrorLine): string {
  const who = line.isReply ? `${line.authorName} (thread reply)` : line.authorName;
  return neutralise(format, `[#${line.channelName}] ${who}: ${line.text}`);
}

/** The JSON body of one message holding `text` (already neutralised and within MESSAGE_MAX_CHARS). */
export function messageBody(format: MirrorFormat, text: string): string {
  switch (format) {
    case 'slack':
    case 'google_chat':
      return JSON.stringify({ text });
    case 'discord':
      return JSON.stringify({ content: text, allowed_mentions: { parse: [] } });
    case 'teams':
      // A Power Automate "Workflows" webhook takes a message whose attachment is one Adaptive Card.
      return JSON.stringify({
        type: 'message',
        attachments: [{
          contentType: 'application/vnd.microsoft.card.adaptive',
          contentUrl: null,
          content: {
            $schema: 'http://adaptivecards.io/schemas/adaptive-card.json',
            type: 'AdaptiveCard',
            version: '1.4',
            body: [{ type: 'TextBlock', text, wrap: true }],
          },
        }],
      });
  }
}

/** Splits `text` into pieces of at most `max` UTF-16 units, preferring a line break or space, never inside a surrogate pair. */
export function splitText(text: string, max: number): string[] {
  const parts: string[] = [];
  let rest = text;
  while (rest.length > max) {
    let cut = max;
    const soft = Math.max(rest.lastIndexOf('\n', max), rest.lastIndexOf(' ', max));
    if (soft > max / 2) cut = soft;
    else if (/[\uD800-\uDBFF]/.test(rest[cut - 1])) cut -= 1;
    parts.push(rest.slice(0, cut));
    rest = rest.slice(cut).replace(/^[ \n]/, '');
  }
  if (rest.length > 0 || parts.length === 0) parts.push(rest);
  return parts;
}

/**
 * The next message(s) from the lines waiting, oldest first: as many whole lines as fit in one
 * message (at least one), joined by line breaks. A first line longer than one message is sent
 * alone, split into as many messages as it needs (Discord; the other formats take it whole up
 * to their own, larger limits). Answers the bodies in order and how many lines they used.
 */
export function packMessages(format: MirrorFormat, lines: readonly MirrorLine[]): { bodies: string[]; used: number } {
  if (lines.length === 0) return { bodies: [], used: 0 };
  const max = MESSAGE_MAX_CHARS[format];
  const texts = lines.map((l) => lineText(format, l));
  if (texts[0].length > max) {
    const pieces = format === 'discord' ? splitText(texts[0], max) : [texts[0]];
    return { bodies: pieces.map((p) => messageBody(format, p)), used: 1 };
  }
  let text = texts[0];
  let used = 1;
  while (used < texts.length && text.length + 1 + texts[used].length <= max) {
    text += `\n${texts[used]}`;
    used += 1;
  }
  return { bodies: [messageBody(format, text)], used };
}

/** The test message POST .../mirrors/{id}/test sends. */
export function testMessageBody(format: MirrorFormat): string {
  return messageBody(format, neutralise(format, 'Teamchat mirror test: this channel will receive the mirrored messages.'));
}
