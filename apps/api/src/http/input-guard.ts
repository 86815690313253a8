/**
 * Rules every string of a request obeys, whatever the route's schema (docs/api.md "Hostile input"):
 * no NUL (PostgreSQL cannot store U+0000 in text or jsonb), no lone UTF-16 surrogate (it cannot
 * be encoded as UTF-8, so it would be stored silently changed), and bodies nested at most
 * MAX_DEPTH levels (deeper values cost recursion in every later step, idempotency hashing included).
 * Unknown fields are checked too: they are ignored, but must still be valid input.
 */
export const MAX_DEPTH = 32;

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

export interface HostileInput {
  /** the offending field, Joi-style (`attachments.0.title`); the part's name when at its root */
  field: string;
  message: string;
}

/** Why this string is refused, or null. */
export function stringProblem(value: string): string | null {
  if (value.includes('\u0000')) return 'must not contain the NUL character (U+0000)';
  if (LONE_SURROGATE.test(value)) return 'must be valid Unicode (a lone surrogate such as \\ud800 is not)';
  return null;
}

/** Field names are echoed in the error, so a name that is itself hostile is shown made safe and short. */
const safeName = (name: string) => clip(name.replaceAll('\u0000', '\\u0000').replace(new RegExp(LONE_SURROGATE.source, 'g'), '\uFFFD'), 100);

/** Errors never echo more than `max` characters of what the caller sent. */
export function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

/** The first hostile string, key or nesting in `value` (walked without recursion), or null. */
export function findHostileInput(value: unknown, part: string): HostileInput | null {
  const stack: Array<{ value: unknown; path: string[] }> = [{ value, path: [] }];
  while (stack.length) {
    const { value: v, path } = stack.pop()!;
    const field = () => (path.length ? safeName(path.join('.')) : part);
    if (typeof v === 'string') {
      const problem = stringProblem(v);
      if (problem) return { field: field(), message: `${field()} ${problem}` };
      continue;
    }
    if (!v || typeof v !== 'object') continue;
    if (path.length >= MAX_DEPTH) return { field: field(), message: `${field()} is nested more than ${MAX_DEPTH} levels deep` };
    const entries: Array<[string, unknown]> = Array.isArray(v) ? v.map((item, i) => [String(i), item]) : Object.entries(v);
    for (let i = entries.length - 1; i >= 0; i--) {
      const [key, item] = entries[i];
      const problem = stringProblem(key);
      if (problem) return { field: safeName([...path, key].join('.')), message: `the name of ${safeName([...path, key].join('.'))} ${problem}` };
      stack.push({ value: item, path: [...path, key] });
    }
  }
  return null;
}
