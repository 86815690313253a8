/**
 * Highlights of search results (docs/api.md "Search"): the neighbourhood of the first match,
 * matches wrapped in HIGHLIGHT_START … HIGHLIGHT_END. Those are Unicode private-use characters
 * (U+E000, U+E001), removed from the text first, so a marker in the output is always ours.
 */
export const HIGHLIGHT_START = '\uE000';
export const HIGHLIGHT_END = '\uE001';

/** Characters of context kept before the first match, and the most a highlight shows. */
const BEFORE = 60;
const LENGTH = 240;

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * What to mark: the query's words and quoted phrases (not excluded ones, not `or`), stripped of
 * surrounding punctuation, and the whole query as typed (what the substring match uses).
 */
export function highlightTerms(query: string): string[] {
  const terms = new Set<string>();
  const plain = query.trim();
  if (plain.length >= 3) terms.add(plain);
  for (const m of query.matchAll(/(-?)"([^"]*)"|(\S+)/g)) {
    if (m[1] === '-') continue;
    const raw = m[2] ?? m[3];
    if (raw.startsWith('-') || raw.toLowerCase() === 'or') continue;
    const term = raw.replace(/^[^\p{L}\p{N}]+|[^\p{L}\p{N}]+$/gu, '');
    if (term) terms.add(term);
  }
  return [...terms].sort((a, b) => b.length - a.length);
}

/** The highlight of `text` for `terms` (highlightTerms): the text's start when nothing matches. */
export function highlight(text: string, terms: string[]): string {
  const clean = text.replace(/[\uE000\uE001]/g, '');
  if (terms.length === 0) return clean.slice(0, LENGTH);
  const pattern = new RegExp(terms.map(escape).join('|'), 'giu');
  const spans: Array<[number, number]> = [];
  for (const m of clean.matchAll(pattern)) if (m[0].length > 0) spans.push([m.index!, m.index! + m[0].length]);
  const start = spans.length ? Math.max(0, spans[0][0] - BEFORE) : 0;
  const end = Math.min(clean.length, start + LENGTH);
  let out = start > 0 ? '…' : '';
  let at = start;
  for (const [s, e] of spans) {
    if (s < at) continue;
    if (e > end) break;
    out += clean.slice(at, s) + HIGHLIGHT_START + clean.slice(s, e) + HIGHLIGHT_END;
    at = e;
  }
  out += clean.slice(at, end);
  return end < clean.length ? `${out}…` : out;
}
