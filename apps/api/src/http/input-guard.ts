/**
 * Rules every string of a request obeys, whatever the route's schema (docs/api.md "Hostile input"):
 * no NUL (PostgreSQL cannot store U+0000 in text or jsonb), no lone UTF-16 surrogate (it cannot
 * be encoded as UTF-8, so it would be stored silently changed), bodies nested at most
 * MAX_DEPTH levels (deeper values cost recursion in every later step, idempotency hashing included),
 * and at most MAX_VALUES values in a part. Unknown fields are checked too: they are ignored, but
 * must still be valid input.
 */
export const MAX_DEPTH = 32;
/**
 * Values (array items and object members, at any depth) a request part may hold. No route takes
 * more than a few hundred; a 1 MB body can hold 200,000 or more, each of which costs the guard,
 * Joi and the idempotency hash their time (about a second of the process's only thread for such
 * a body, though every one of them is ignored), so a part over this is refused at once.
 */
export const MAX_VALUES = 10_000;

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

/** A value on the walk's stack, with its key and its parent's frame: the path is built only to name a refused value. */
interface Frame {
  value: unknown;
  key: string | null;
  parent: Frame | null;
  depth: number;
}

function pathOf(frame: Frame, key?: string): string {
  const keys = key === undefined ? [] : [key];
  for (let f: Frame | null = frame; f && f.key !== null; f = f.parent) keys.push(f.key);
  return keys.reverse().join('.');
}

/** Whether a value may hold something to check: strings and containers (numbers, booleans and null hold nothing). */
const worthChecking = (value: unknown) => typeof value === 'string' || (value !== null && typeof value === 'object');

/** The first hostile string, key, nesting or count in `value` (walked without recursion), or null. */
export function findHostileInput(value: unknown, part: string): HostileInput | null {
  const stack: Frame[] = [{ value, key: null, parent: null, depth: 0 }];
  let values = 0;
  while (stack.length) {
    const frame = stack.pop()!;
    const v = frame.value;
    const field = () => (frame.key === null ? part : safeName(pathOf(frame)));
    if (typeof v === 'string') {
      const problem = stringProblem(v);
      if (problem) return { field: field(), message: `${field()} ${problem}` };
      continue;
    }
    if (!v || typeof v !== 'object') continue;
    if (frame.depth >= MAX_DEPTH) return { field: field(), message: `${field()} is nested more than ${MAX_DEPTH} levels deep` };
    const keys = Array.isArray(v) ? null : Object.keys(v);
    values += keys ? keys.length : (v as unknown[]).length;
    if (values > MAX_VALUES) return { field: part, message: `${part} holds more than ${MAX_VALUES} values` };
    if (!keys) {
      const items = v as unknown[];
      for (let i = items.length - 1; i >= 0; i--) {
        if (worthChecking(items[i])) stack.push({ value: items[i], key: String(i), parent: frame, depth: frame.depth + 1 });
      }
      continue;
    }
    for (let i = keys.length - 1; i >= 0; i--) {
      const key = keys[i];
      const problem = stringProblem(key);
      if (problem) return { field: safeName(pathOf(frame, key)), message: `the name of ${safeName(pathOf(frame, key))} ${problem}` };
      const item = (v as Record<string, unknown>)[key];
      if (worthChecking(item)) stack.push({ value: item, key, parent: frame, depth: frame.depth + 1 });
    }
  }
  return null;
}
