import { ERROR_STATUS, type ErrorCode } from '@teamchat/core';
import type { ErrorTable } from '../errors';
import type { JsonSchema } from './joi';

/** The error body (spec: Errors) for one code, with the `reason`s it may carry on this route. */
function bodyFor(code: ErrorCode, reasons: readonly string[]): JsonSchema {
  const properties: Record<string, JsonSchema | boolean> = {
    code: { const: code },
    message: { type: 'string', description: 'For people; may change.' },
  };
  properties.reason = reasons.length ? { enum: [...reasons] } : false;
  const required = ['code', 'message'];
  if (ERROR_STATUS[code] >= 500) {
    properties.request_id = { type: 'string' };
    properties.status_url = { type: 'string' };
    required.push('request_id', 'status_url');
  }
  if (code === 'rate_limited' || code === 'budget_exceeded') properties.scope = { type: 'string', description: 'The limit hit.' };
  if (code === 'budget_exceeded') properties.budget = { $ref: '#/components/schemas/Budget' };
  if (code === 'confirmation_required') {
    properties.approval_id = { type: 'string' };
    properties.approval_url = { type: 'string', description: 'A person opens it, signed in, to approve.' };
  }
  return {
    type: 'object',
    required,
    properties,
    // Other fields narrow some errors (`field`, `details`, `host`, `required_scope`, ...): docs/api.md "Errors".
    additionalProperties: true,
  };
}

/** The component holding the error body of `code` with exactly these reasons (shared by every route with the same). */
function variantRef(code: ErrorCode, reasons: readonly string[], components: Record<string, JsonSchema>): JsonSchema {
  const name = ['Error', code, ...[...reasons].sort()].join('.');
  components[name] ??= bodyFor(code, [...reasons].sort());
  return { $ref: `#/components/schemas/${name}` };
}

/** Error responses by HTTP status: `{ error }` whose `code` is one of the route's codes for that status. */
export function errorResponses(table: ErrorTable, components: Record<string, JsonSchema>): Record<string, JsonSchema> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of Object.keys(table) as ErrorCode[]) {
    const status = ERROR_STATUS[code];
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  const out: Record<string, JsonSchema> = {};
  for (const [status, codes] of [...byStatus].sort((a, b) => a[0] - b[0])) {
    const variants = codes.map((c) => variantRef(c, table[c] ?? [], components));
    out[String(status)] = {
      description: codes.map((c) => `\`${c}\`${table[c]?.length ? ` (${table[c]!.map((r) => `\`${r}\``).join(', ')})` : ''}`).join(', '),
      headers: {
        'X-Request-Id': { $ref: '#/components/headers/X-Request-Id' },
        ...(status === 429 ? { 'Retry-After': { $ref: '#/components/headers/Retry-After' } } : {}),
      },
      content: {
        'application/json': {
          schema: {
            type: 'object',
            required: ['error'],
            properties: { error: variants.length === 1 ? variants[0] : { oneOf: variants } },
            additionalProperties: false,
          },
        },
      },
    };
  }
  return out;
}
