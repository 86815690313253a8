import type Joi from 'joi';
import { ROUTES } from '../src';

/**
 * docs/api.md "Hostile input", strict input: every route's schemas use the shared input rules
 * (packages/core/src/input-rules.ts), so a new field cannot bring back the lenient Joi defaults.
 * A body's number or boolean is strict (bodyNumber, bodyBoolean: a string is refused); a query's
 * or path's number is digits only (queryInteger); every date-time is dateTimeSchema.
 */
type Description = Record<string, unknown> & { type?: string; preferences?: { convert?: boolean; messages?: Record<string, unknown> } };

/** Every schema description inside `d`, with its path. */
function* schemasIn(d: unknown, at: string): Generator<[string, Description]> {
  if (Array.isArray(d)) {
    for (const [i, x] of d.entries()) yield* schemasIn(x, `${at}[${i}]`);
    return;
  }
  if (d === null || typeof d !== 'object') return;
  const node = d as Description;
  if (typeof node.type === 'string') yield [at, node];
  for (const [k, v] of Object.entries(node)) {
    if (['flags', 'rules', 'messages', 'preferences', 'metas', 'allow', 'invalid'].includes(k)) continue;
    yield* schemasIn(v, `${at}.${k}`);
  }
}

function describeMap(part: Joi.PartialSchemaMap | Joi.ObjectSchema): unknown {
  const s = part as { describe?: () => unknown };
  return typeof s.describe === 'function' && (part as Joi.Schema).type ? s.describe() : Object.fromEntries(
    Object.entries(part as Record<string, Joi.Schema>).map(([k, v]) => [k, v.describe()]),
  );
}

const found: Array<{ where: string; part: string; node: Description }> = [];
for (const route of ROUTES) {
  const request = (route as { request?: Record<string, Joi.PartialSchemaMap | Joi.ObjectSchema> }).request ?? {};
  for (const [part, schema] of Object.entries(request)) {
    if (!schema) continue;
    for (const [where, node] of schemasIn(describeMap(schema), `${route.id} ${part}`)) found.push({ where, part, node });
  }
}

test('the walk sees the fields it checks (numbers, booleans, dates in bodies and queries)', () => {
  const kinds = new Set(found.map((f) => `${f.part}:${f.node.type}`));
  for (const k of ['body:number', 'body:boolean', 'body:date', 'query:number', 'query:date']) expect(kinds).toContain(k);
});

test('a body\'s numbers and booleans are strict (a string "30" or "true" is refused)', () => {
  const lenient = found.filter((f) => f.part === 'body' && ['number', 'boolean'].includes(f.node.type!) && f.node.preferences?.convert !== false);
  expect(lenient.map((f) => f.where)).toEqual([]);
});

test('a query\'s or path\'s numbers are queryInteger (digits only before conversion)', () => {
  const lenient = found.filter((f) => f.part !== 'body' && f.node.type === 'number' && !f.node.preferences?.messages?.['number.digits']);
  expect(lenient.map((f) => f.where)).toEqual([]);
});

test('every date-time is dateTimeSchema (strict RFC 3339, 1970..9999)', () => {
  const lenient = found.filter((f) => f.node.type === 'date' && !f.node.preferences?.messages?.['date.rfc3339']);
  expect(lenient.map((f) => f.where)).toEqual([]);
});
