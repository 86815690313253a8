import { retryAfterMs, RETRY_AFTER_DEFAULT_MS, RETRY_AFTER_MAX_MS } from '../src/mirrors/pace';
import { lineText, MIRROR_FORMATS, neutralise, packMessages, splitText, testMessageBody, type MirrorLine } from '../src/mirrors/format';

/** docs/mirrors.md "Formats": each format's body, the line's shape, mentions neutralised, Discord's split. */
const line = (text: string, extra: Partial<MirrorLine> = {}): MirrorLine => ({ channelName: 'general', authorName: 'Ada', text, isReply: false, ...extra });
const ZWSP = '\u200B';

describe('mirror formats', () => {
  it('slack: {"text"} naming the channel and the author, then the text as posted', () => {
    const { bodies, used } = packMessages('slack', [line('hello world')]);
    expect(used).toBe(1);
    expect(JSON.parse(bodies[0])).toEqual({ text: '[#general] Ada: hello world' });
  });

  it('google_chat: {"text"}', () => {
    expect(JSON.parse(packMessages('google_chat', [line('hi')]).bodies[0])).toEqual({ text: '[#general] Ada: hi' });
  });

  it('discord: {"content", "allowed_mentions": {"parse": []}}', () => {
    expect(JSON.parse(packMessages('discord', [line('hi')]).bodies[0])).toEqual({ content: '[#general] Ada: hi', allowed_mentions: { parse: [] } });
  });

  it('teams: a Workflows message with one Adaptive Card holding the text', () => {
    const body = JSON.parse(packMessages('teams', [line('hi')]).bodies[0]);
    expect(body.type).toBe('message');
    expect(body.attachments).toHaveLength(1);
    expect(body.attachments[0].contentType).toBe('application/vnd.microsoft.card.adaptive');
    expect(body.attachments[0].content.type).toBe('AdaptiveCard');
    expect(body.attachments[0].content.body).toEqual([{ type: 'TextBlock', text: '[#general] Ada: hi', wrap: true }]);
  });

  it('a thread reply says so', () => {
    expect(lineText('discord', line('yes', { isReply: true }))).toBe('[#general] Ada (thread reply): yes');
  });

  it.each(MIRROR_FORMATS)('%s: broadcast and user mentions never survive as mentions', (format) => {
    const text = lineText(format, line('@here @channel @everyone @all @ada <!here> <!channel> <@U123> <@!42> <@&7> <#9> <users/all> <at>Ada</at>', { authorName: '@everyone' }));
    for (const word of ['@here', '@channel', '@everyone', '@all', '@ada']) expect(text).not.toContain(word);
    expect(text).toContain(`@${ZWSP}here`);
    for (const raw of ['<!here>', '<!channel>', '<@U123>', '<@!42>', '<@&7>', '<#9>', '<users/all>', '<at>']) expect(text).not.toContain(raw);
  });

  it('slack escapes &, < and > as Slack documents', () => {
    expect(neutralise('slack', 'a & <b> <!here>')).toBe('a &amp; &lt;b&gt; &lt;!here&gt;');
  });

  it('plain addresses and text stay readable (only a zero-width space is added)', () => {
    expect(neutralise('discord', 'mail ada@example.com').replace(new RegExp(ZWSP, 'g'), '')).toBe('mail ada@example.com');
  });

  it('waiting lines merge into one message up to the format size', () => {
    const lines = Array.from({ length: 5 }, (_, i) => line(`line ${i}`));
    const { bodies, used } = packMessages('slack', lines);
    expect(used).toBe(5);
    expect(JSON.parse(bodies[0]).text.split('\n')).toHaveLength(5);
    const long = Array.from({ length: 5 }, () => line('x'.repeat(900)));
    const discord = packMessages('discord', long);
    expect(discord.used).toBe(2);
    expect(JSON.parse(discord.bodies[0]).content.length).toBeLessThanOrEqual(2000);
  });

  it('discord splits a line longer than 2,000 characters into messages of at most 2,000', () => {
    const { bodies, used } = packMessages('discord', [line('word '.repeat(1000)), line('next')]);
    expect(used).toBe(1);
    expect(bodies.length).toBe(3);
    for (const b of bodies) expect(JSON.parse(b).content.length).toBeLessThanOrEqual(2000);
  });

  it('splitText never cuts a surrogate pair', () => {
    const parts = splitText('😀'.repeat(1500), 2000);
    for (const p of parts) expect(p).not.toMatch(/^[\uDC00-\uDFFF]|[\uD800-\uDBFF]$/);
    expect(parts.join('')).toBe('😀'.repeat(1500));
  });

  it.each(MIRROR_FORMATS)('%s: the test message is valid JSON', (format) => {
    expect(() => JSON.parse(testMessageBody(format))).not.toThrow();
  });
});

describe('the receiver\'s pace (429)', () => {
  const now = new Date('2026-01-01T00:00:00Z');
  const answer = (headers: Record<string, string>, body = '') => ({ headers, body });
  it('Retry-After in seconds or as an HTTP date', () => {
    expect(retryAfterMs(answer({ 'retry-after': '3' }), now)).toBe(3000);
    expect(retryAfterMs(answer({ 'retry-after': 'Thu, 01 Jan 2026 00:00:10 GMT' }), now)).toBe(10_000);
  });
  it('Discord\'s JSON retry_after (fractional seconds) when there is no header', () => {
    expect(retryAfterMs(answer({}, '{"retry_after": 1.25, "global": false}'), now)).toBe(1250);
  });
  it('nothing usable: a short default; a huge value is capped', () => {
    expect(retryAfterMs(answer({}, 'slow down'), now)).toBe(RETRY_AFTER_DEFAULT_MS);
    expect(retryAfterMs(undefined, now)).toBe(RETRY_AFTER_DEFAULT_MS);
    expect(retryAfterMs(answer({ 'retry-after': '999999' }), now)).toBe(RETRY_AFTER_MAX_MS);
  });
});
