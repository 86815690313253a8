import fc from 'fast-check';
import type { RouteRow } from './routes';

/**
 * Generators of hostile requests (docs/api.md, 'Hostile input'): strings with unicode edge cases, wrong types,
 * huge and deep values, prototype keys, malformed percent-encodings, forged and truncated
 * cursors, non-UUID Idempotency-Keys. Valid values are mixed in so requests also get past the
 * first check and reach the database.
 */

/** Characters that break naive code: NUL, lone surrogates, RTL/zero-width marks, BOM, combining marks, syntax. */
const EDGE_UNITS = [
  '\u0000', '\ud800', '\udbff', '\udc00', '\udfff', '\u202e', '\u202d', '\u200f', '\u200b', '\u2028', '\ufeff', '\uffff', '\ufffd',
  '😀', '\u0301', 'é', 'İ', 'ß', '\\', '"', "'", '`', '%', '/', '.', '?', '#', '&', '=', '+', ' ', '\n', '\r', '\t', '*', ':',
  ';', ',', '<', '>', '$', '{', '}', '[', ']', '(', ')', '|', '!', '~', '^', '@', '_', '-', '\u007f', '\u0085',
];

export const edgeString = fc.string({
  unit: fc.oneof(fc.constantFrom(...EDGE_UNITS), fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }), fc.constantFrom('a', '0', 'Z')),
  maxLength: 24,
});

const SPECIAL_STRINGS = [
  '', ' ', '__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', 'null', 'undefined', 'NaN', 'Infinity',
  '-1', '0', '1e309', '9'.repeat(40), '-9223372036854775809', '9223372036854775808', '2147483648', '0x10', '1.5',
  '999999999999.999999', '0000000000.000000', '1700000000.000001', '1700000000.1', 'true', '[]', '{}', '%00', '%zz', '..', '../..',
  'acct_', 'ch_', 'all', '*', 'a'.repeat(300), 'SELECT 1; --', "' OR '1'='1", '<script>', '${x}', '\u0000', '\ud800', 'x\u0000y',
];

/** Any hostile string: edge units, special literals, or a long one (over every text limit). */
export const hostileString = fc.oneof(
  { weight: 5, arbitrary: edgeString },
  { weight: 3, arbitrary: fc.constantFrom(...SPECIAL_STRINGS) },
  { weight: 1, arbitrary: fc.tuple(fc.constantFrom('a', 'é', '😀', '\u0000', ' '), fc.integer({ min: 200, max: 40_000 })).map(([c, n]) => c.repeat(n)) },
);

const hostileNumber = fc.oneof(
  fc.constantFrom(0, -1, 1, 2 ** 31 - 1, 2 ** 31, 2 ** 53, -(2 ** 53), 1e308, -1e308, 0.5, -0, 1e-320),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
);

/** JSON nested `depth` levels: arrays or objects (a deep value is refused beyond 32 levels). */
const deepValue = fc.tuple(fc.integer({ min: 2, max: 200 }), fc.boolean()).map(([depth, arrays]) => {
  let v: unknown = 'x';
  for (let i = 0; i < depth; i++) v = arrays ? [v] : { a: v };
  return v;
});

/** A value of any JSON type, often the wrong one for the field. */
export const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: hostileString },
  { weight: 2, arbitrary: hostileNumber },
  { weight: 1, arbitrary: fc.constantFrom(null, true, false, [], {}) },
  { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  { weight: 1, arbitrary: fc.array(hostileString, { maxLength: 12 }) },
  { weight: 1, arbitrary: fc.array(fc.dictionary(fc.constantFrom('title', 'url', 'file_id', 'mime_type', 'size', '__proto__'), fc.oneof(hostileString, hostileNumber)), { maxLength: 12 }) },
  { weight: 1, arbitrary: deepValue },
  { weight: 1, arbitrary: fc.array(fc.constant('x'), { minLength: 1000, maxLength: 5000 }) },
);

/** Valid-looking values per field, so some requests reach the use case and the database. */
const PLAUSIBLE: Record<string, fc.Arbitrary<unknown>> = {
  text: fc.oneof(fc.constant('hello'), edgeString),
  name: fc.oneof(fc.stringMatching(/^[a-z0-9][a-z0-9._-]{0,20}$/), edgeString),
  topic: edgeString,
  client_ref: edgeString,
  version: fc.oneof(fc.constant(1), hostileNumber),
  thread_ts: fc.constantFrom('1700000000.000001', '999999999999.999999'),
  attachments: fc.constant([{ title: 'x', url: 'https://example.com/a' }]),
  links: fc.constant(['https://example.com']),
  members: fc.array(edgeString, { minLength: 1, maxLength: 3 }),
  identity_id: edgeString,
  scopes: fc.constantFrom([], ['channels:read'], ['webhooks:manage'], ['nope']),
  email: fc.oneof(fc.emailAddress(), edgeString),
  password: edgeString,
};

/** A JSON text. Keys are written by hand so `__proto__` lands as an own key, as a client would send it. */
function objectText(entries: Array<[string, unknown]>): string {
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v) ?? 'null'}`).join(',')}}`;
}

const PROTO_KEYS = ['__proto__', 'constructor', 'prototype'];

/** Strings that are odd but valid (RTL marks, emoji, combining marks...): they must reach the database and come back intact. */
const oddButValid = edgeString.map((x) => x.replaceAll('\u0000', '').replace(/[\uD800-\uDFFF]/g, (c, i, all: string) =>
  (/[\uD800-\uDBFF]/.test(c) && /[\uDC00-\uDFFF]/.test(all[i + 1] ?? '')) || (/[\uDC00-\uDFFF]/.test(c) && /[\uD800-\uDBFF]/.test(all[i - 1] ?? '')) ? c : ''));

/**
 * A body for `row`: its example with a field or two replaced, an object aimed at its fields,
 * prototype pollution, or broken text. `valid` gives the fixture's values for the example.
 */
export function bodyFor(row: RouteRow, valid: Record<string, string>): fc.Arbitrary<string | undefined> {
  const fields = row.body ?? [];
  const keys = fc.oneof(
    { weight: fields.length ? 6 : 0, arbitrary: fields.length ? fc.constantFrom(...fields) : fc.constant('x') },
    { weight: 1, arbitrary: fc.constantFrom(...PROTO_KEYS) },
    { weight: 1, arbitrary: hostileString },
  );
  // Object.hasOwn: the keys include `constructor` and `toString`, which every object inherits.
  const value = (key: string) => (Object.hasOwn(PLAUSIBLE, key)
    ? fc.oneof(PLAUSIBLE[key], oddButValid, hostileValue)
    : fc.oneof(oddButValid, hostileValue));
  const entry = keys.chain((k) => value(k).map((v) => [k, v] as [string, unknown]));
  const example = Object.entries(row.example?.(valid) ?? {});
  const mutated = fc.array(entry, { maxLength: 2 }).map((changes) => {
    const out = new Map<string, unknown>(example);
    for (const [k, v] of changes) out.set(k, v);
    return objectText([...out]);
  });
  const aimed = fc.array(entry, { maxLength: 8 }).map(objectText);
  const pollution = fc.tuple(fc.constantFrom(...PROTO_KEYS), fc.jsonValue({ maxDepth: 2 }))
    .map(([k, v]) => objectText([...example, [k, { isAdmin: true, polluted: v }]]));
  const broken = fc.oneof(
    fc.constantFrom('', '{', '{"a":', 'null', '[]', '[1,2]', '"text"', '123', 'true', '{"a":1}}', '\u0000', '{"a":"\\ud800"}', '{"a":"\\u0000"}'),
    fc.jsonValue().map((v) => JSON.stringify(v)),
    edgeString,
  );
  return fc.oneof(
    { weight: example.length ? 6 : 0, arbitrary: mutated },
    { weight: 3, arbitrary: aimed },
    { weight: 1, arbitrary: pollution },
    { weight: 1, arbitrary: broken },
    { weight: 1, arbitrary: fc.constant(undefined) },
  );
}

/** Percent-encodes a string the way a sloppy client would: a lone surrogate as its 3 WTF-8 bytes. */
export function encodeSegment(s: string): string {
  let out = '';
  for (const ch of s) {
    const code = ch.codePointAt(0)!;
    if (code >= 0xd800 && code <= 0xdfff) {
      out += [0xe0 | (code >> 12), 0x80 | ((code >> 6) & 0x3f), 0x80 | (code & 0x3f)].map((b) => `%${b.toString(16).toUpperCase()}`).join('');
    } else out += encodeURIComponent(ch);
  }
  return out;
}

/** A path segment: the valid value, an encoded hostile string, or raw (often invalid) percent bytes. */
export function segment(valid: string | undefined): fc.Arbitrary<string> {
  const hostile = fc.oneof(
    { weight: 4, arbitrary: hostileString.map(encodeSegment) },
    { weight: 1, arbitrary: fc.array(fc.integer({ min: 0, max: 255 }), { minLength: 1, maxLength: 6 }).map((bytes) => bytes.map((b) => `%${b.toString(16).padStart(2, '0')}`).join('')) },
    { weight: 1, arbitrary: fc.constantFrom('%', '%z', '%zz', '%%', '%00', '%2F', '%2e%2e', '..', '.') },
  );
  return valid === undefined ? hostile : fc.oneof({ weight: 4, arbitrary: fc.constant(valid) }, { weight: 1, arbitrary: hostile });
}

/** Cursors: real ones, truncated, with a flipped character, another list's, or forged. */
export function cursorArb(real: string[]): fc.Arbitrary<string> {
  const forged = fc.tuple(fc.jsonValue({ maxDepth: 2 }), fc.stringMatching(/^[0-9a-f]{0,40}$/))
    .map(([body, sig]) => `${Buffer.from(JSON.stringify(body)).toString('base64url')}.${sig}`);
  const fromReal = fc.tuple(fc.constantFrom(...real), fc.nat(), fc.constantFrom('truncate', 'flip', 'as-is', 'extra', 'resign'))
    .map(([c, n, how]) => {
      const i = n % c.length;
      if (how === 'truncate') return c.slice(0, i);
      if (how === 'flip') return c.slice(0, i) + (c[i] === 'A' ? 'B' : 'A') + c.slice(i + 1);
      if (how === 'extra') return `${c}.x`;
      if (how === 'resign') return `${c.split('.')[0]}.${'0'.repeat(32)}`;
      return c;
    });
  return fc.oneof(fromReal, forged, hostileString);
}

/** A query string for `row`: limit and cursor on lists, the row's own params, unknown and repeated ones. */
export function queryFor(row: RouteRow, realCursors: string[]): fc.Arbitrary<string> {
  const pairs: Array<fc.Arbitrary<[string, string]>> = [fc.tuple(hostileString, hostileString)];
  if (row.list) {
    pairs.push(fc.tuple(fc.constant('limit'), fc.oneof(fc.constantFrom('1', '200', '201', '0', '-1', '1.5', '1e3', '99999999999999999999'), hostileString)));
    pairs.push(fc.tuple(fc.constant('cursor'), cursorArb(realCursors)));
  }
  for (const q of row.query ?? []) pairs.push(fc.tuple(fc.constant(q), fc.oneof(fc.constant('hello'), hostileString)));
  const pair = fc.oneof(...pairs);
  const some = fc.array(pair, { minLength: 1, maxLength: 5 }).map((list) => list.map(([k, v]) => `${encodeSegment(k)}=${encodeSegment(v)}`).join('&'));
  return fc.oneof(fc.constant(''), some);
}

/** Header values must be bytes a real client can send: printable latin1 (Node refuses the rest). */
const headerText = fc.string({ unit: fc.oneof(fc.integer({ min: 0x20, max: 0x7e }), fc.integer({ min: 0xa0, max: 0xff })).map((c) => String.fromCharCode(c)), maxLength: 60 });

export interface HeaderSet {
  idempotencyKey?: string;
  ifMatch?: string;
  requestId?: string;
  contentType?: string;
  contentEncoding?: string;
  accept?: string;
  /** replaces the credential's Authorization header (API host) */
  authorization?: string;
  /** replaces the CSRF token (web host) */
  csrf?: string;
  /** replaces the session cookie (web host) */
  cookie?: string;
}

/** `arb` in about one run out of `every`, else absent. */
const sometimes = <T>(arb: fc.Arbitrary<T>, every: number) =>
  fc.oneof({ weight: every - 1, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: arb });

export const headersArb: fc.Arbitrary<HeaderSet> = fc.record({
  idempotencyKey: sometimes(fc.oneof({ weight: 3, arbitrary: fc.uuid() }, fc.constantFrom('', 'not-a-uuid', '00000000-0000-0000-0000-00000000000g', '{6f1c2b1e-8a7d-4c1e-9a3b-1c2d3e4f5a6b}'), headerText), 2),
  ifMatch: sometimes(fc.oneof(fc.constantFrom('"1"', '*', 'W/"1"', '"999999999"', '"9999999999"', '"-1"', '""'), headerText), 3),
  requestId: sometimes(fc.oneof(fc.constantFrom('x'.repeat(200), 'req_ok_12345678'), headerText), 4),
  contentType: fc.oneof(
    { weight: 12, arbitrary: fc.constant('application/json') },
    { weight: 3, arbitrary: fc.constantFrom('application/json; charset=utf-8', 'application/json; charset=utf-16', 'application/json; charset=latin1',
      'application/merge-patch+json', 'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/json; charset=nope') },
    { weight: 1, arbitrary: headerText },
  ),
  contentEncoding: sometimes(fc.constantFrom('gzip', 'deflate', 'br', 'identity', 'x-unknown'), 10),
  accept: sometimes(headerText, 5),
  authorization: sometimes(fc.oneof(fc.constantFrom('Bearer', 'Bearer ', 'Basic abc', 'Bearer tc_key_forged', 'Bearer tc_agt_x', 'Bearer tc_ses_forged'), headerText), 10),
  csrf: sometimes(headerText, 10),
  cookie: sometimes(fc.oneof(fc.constantFrom('tc_session=%00', 'tc_session=%zz', 'tc_session=', 'tc_session=tc_ses_x; tc_session=y', '=; ;'), headerText), 10),
});
