import Joi from 'joi';
import { errorsOf } from '../errors';
import { ROUTES } from '../routes';
import { hostsOf, isAccountRoute, type Host, type RouteDeclaration } from '../route';
import { errorResponses } from './errors';
import { toJsonSchema, type JsonSchema } from './joi';
import { webhooksSection } from './webhooks';

export interface ServerEntry {
  url: string;
  description: string;
}

/** The hosts as the committed document (docs/openapi.json) names them: the default configuration's. */
export const DEFAULT_SERVERS: Record<Host, ServerEntry> = {
  api: { url: 'http://localhost:3000', description: 'API host ({base_url}): API keys and agent tokens (PUBLIC_API_URL)' },
  web: { url: 'http://localhost:3001', description: "Web host ({web_api_url}): the web app's session (PUBLIC_WEB_URL)" },
};

const SAFE = new Set(['GET', 'HEAD', 'OPTIONS']);

const ref = (kind: string, name: string) => ({ $ref: `#/components/${kind}/${name}` });

/** Security requirements: any one of them lets the call in (OpenAPI: alternatives). */
function securityOf(r: RouteDeclaration): Array<Record<string, string[]>> {
  if (r.access === 'public') return [];
  const session: Array<Record<string, string[]>> = [
    { webSession: [] },
    SAFE.has(r.method) ? { webSessionCookie: [] } : { webSessionCookie: [], csrfToken: [] },
  ];
  if (r.access === 'web_session') return session;
  // A credential needs the scope (spec: Authentication 4-8); 3.1 lets a bearer requirement list it.
  return [{ credential: r.scope ? [r.scope] : [] }, ...session];
}

function paramSchemas(map: Joi.PartialSchemaMap | undefined, components: Record<string, JsonSchema>): Record<string, JsonSchema> {
  const out: Record<string, JsonSchema> = {};
  for (const [name, schema] of Object.entries(map ?? {})) out[name] = toJsonSchema(schema as Joi.Schema, components);
  return out;
}

const PARAM_DESCRIPTIONS: Record<string, string> = {
  accountId: 'The account the call acts in (`acct_…`).',
  limit: 'Items per page, 1..200 (default 50).',
  cursor: '`next_cursor` of the previous page; a malformed, expired or foreign cursor answers 400 `invalid_cursor`.',
};

function parametersOf(r: RouteDeclaration, components: Record<string, JsonSchema>): JsonSchema[] {
  const out: JsonSchema[] = [];
  const params = paramSchemas(r.request?.params as Joi.PartialSchemaMap | undefined, components);
  for (const m of r.path.matchAll(/\{(\w+)\}/g)) {
    const name = m[1];
    if (name === 'accountId') {
      out.push(ref('parameters', 'accountId'));
      continue;
    }
    out.push({ name, in: 'path', required: true, schema: params[name] ?? { type: 'string' } });
  }
  const query = paramSchemas(r.request?.query as Joi.PartialSchemaMap | undefined, components);
  for (const [name, schema] of Object.entries(query)) {
    if (r.list && (name === 'limit' || name === 'cursor')) {
      out.push(ref('parameters', name));
      continue;
    }
    const required = (r.request!.query as Record<string, Joi.Schema>)[name]._flags?.presence === 'required';
    out.push({ name, in: 'query', required, schema, ...(PARAM_DESCRIPTIONS[name] ? { description: PARAM_DESCRIPTIONS[name] } : {}) });
  }
  if (r.creating) out.push(ref('parameters', 'Idempotency-Key'));
  if (r.ifMatch) out.push(ref('parameters', 'If-Match'));
  out.push(ref('parameters', 'X-Request-Id'));
  return out;
}

function requestBodyOf(r: RouteDeclaration, components: Record<string, JsonSchema>): JsonSchema | undefined {
  const body = r.request?.body;
  if (!body) return undefined;
  const schema = Joi.isSchema(body) ? (body as Joi.Schema) : Joi.object(body as Joi.PartialSchemaMap);
  return {
    required: true,
    description: 'Unknown fields are ignored.',
    content: { 'application/json': { schema: toJsonSchema(schema, components) } },
  };
}

function successResponses(r: RouteDeclaration, components: Record<string, JsonSchema>): Record<string, JsonSchema> {
  const out: Record<string, JsonSchema> = {};
  const limited = isAccountRoute(r);
  for (const [status, d] of Object.entries(r.responses).sort((a, b) => Number(a[0]) - Number(b[0]))) {
    const headers: Record<string, JsonSchema> = { 'X-Request-Id': ref('headers', 'X-Request-Id') };
    if (limited) {
      headers.RateLimit = ref('headers', 'RateLimit');
      headers['RateLimit-Policy'] = ref('headers', 'RateLimit-Policy');
      headers['X-Call-Units-Cost'] = ref('headers', 'X-Call-Units-Cost');
      headers['X-Call-Units-Remaining'] = ref('headers', 'X-Call-Units-Remaining');
    }
    for (const h of d.headers ?? []) headers[h] = ref('headers', h);
    out[status] = {
      description: d.description,
      headers,
      ...(d.body ? { content: { [d.contentType ?? 'application/json']: { schema: toJsonSchema(d.body, components) } } } : {}),
    };
  }
  return out;
}

function operationOf(r: RouteDeclaration, components: Record<string, JsonSchema>, hostServers: Record<Host, ServerEntry>): JsonSchema {
  const hosts = hostsOf(r);
  const notes: string[] = [];
  if (r.description) notes.push(r.description);
  if (r.access === 'web_session') notes.push('**Web session only**: a credential gets 403 `forbidden`, reason `web_session_required`.');
  if (r.scope) notes.push(`Scope: \`${r.scope}\`${r.roles ? ` (${r.roles} only)` : ''}.`);
  if (r.creating) notes.push('A creating POST: an `Idempotency-Key` (UUID) repeated within 24 hours answers the first response with `Idempotent-Replayed: true`.');
  if (hosts.length === 1) notes.push(`Served on the ${hosts[0] === 'api' ? 'API' : 'web'} host only.`);
  return {
    operationId: r.id,
    tags: [r.tag],
    summary: r.summary,
    ...(notes.length ? { description: notes.join('\n\n') } : {}),
    ...(hosts.length === 1 ? { servers: [hostServers[hosts[0]]] } : {}),
    security: securityOf(r),
    parameters: parametersOf(r, components),
    ...(requestBodyOf(r, components) ? { requestBody: requestBodyOf(r, components) } : {}),
    responses: { ...successResponses(r, components), ...errorResponses(errorsOf(r), components) },
    'x-hosts': [...hosts],
    'x-access': r.access,
    ...(r.scope ? { 'x-scope': r.scope } : {}),
    'x-idempotent': r.idempotent,
  };
}

const COMMON_COMPONENTS = {
  securitySchemes: {
    credential: {
      type: 'http', scheme: 'bearer',
      description: 'API host: an API key (`tc_key_…`) or an agent token (`tc_agt_…`). The web host refuses it with 401 `unauthorized`, '
        + 'reason `wrong_host`, naming the API host. The listed scope is the one the route needs.',
    },
    webSession: {
      type: 'http', scheme: 'bearer',
      description: "Web host: the web session's token (`session_token` from POST /auth/sign-in) as a bearer; no CSRF token needed. "
        + 'The API host refuses it with `wrong_host`, naming the web host.',
    },
    webSessionCookie: { type: 'apiKey', in: 'cookie', name: 'tc_session', description: 'Web host: the session cookie set by sign-in.' },
    csrfToken: {
      type: 'apiKey', in: 'header', name: 'X-CSRF-Token',
      description: 'With the cookie, on every state-changing request: `csrf_token` from sign-in (else 403 `forbidden`, reason `csrf`).',
    },
  },
  parameters: {
    accountId: { name: 'accountId', in: 'path', required: true, description: PARAM_DESCRIPTIONS.accountId, schema: { type: 'string', pattern: '^acct_[a-z0-9]{1,64}$' } },
    limit: { name: 'limit', in: 'query', required: false, description: PARAM_DESCRIPTIONS.limit, schema: { type: 'integer', minimum: 1, maximum: 200, default: 50 } },
    cursor: { name: 'cursor', in: 'query', required: false, description: PARAM_DESCRIPTIONS.cursor, schema: { type: 'string', maxLength: 2048 } },
    'Idempotency-Key': {
      name: 'Idempotency-Key', in: 'header', required: false, schema: { type: 'string', format: 'uuid' },
      description: 'A UUID: within 24 hours a repeat with the same key (per person and route) answers the original response without creating '
        + 'a second object; the same key with another body answers 409 `idempotency_conflict`.',
    },
    'If-Match': {
      name: 'If-Match', in: 'header', required: false, schema: { type: 'string' },
      description: 'An `ETag` from a read or a write (`"3"`): the change is refused (412 `stale`, or 409 `edit_conflict` for a message) if the resource changed since. `*` matches any version.',
    },
    'X-Request-Id': {
      name: 'X-Request-Id', in: 'header', required: false, schema: { type: 'string', pattern: '^[A-Za-z0-9._:-]{8,128}$' },
      description: 'Echoed back when it looks like this; otherwise the response carries a new one.',
    },
  },
  headers: {
    'X-Request-Id': { description: 'The request id (every response carries it; quote it when you contact us).', schema: { type: 'string' } },
    ETag: { description: 'The resource\'s version as a strong ETag (`"3"`): send it back as `If-Match`.', schema: { type: 'string' } },
    'Idempotent-Replayed': { description: '`true` when this is the stored answer of an earlier request with the same `Idempotency-Key`.', schema: { type: 'string', const: 'true' } },
    'Cache-Control': { description: '`no-store`: the answer carries a secret.', schema: { type: 'string' } },
    'Set-Cookie': { description: 'The web session cookie (`tc_session`, HttpOnly, SameSite=Lax).', schema: { type: 'string' } },
    RateLimit: { description: 'IETF RateLimit (draft 8): the seat\'s calls left this minute (`r`) and seconds to the reset (`t`).', schema: { type: 'string' } },
    'RateLimit-Policy': { description: 'IETF RateLimit-Policy (draft 8): calls per minute per seat (`q`) and the window (`w`, seconds).', schema: { type: 'string' } },
    'Retry-After': { description: 'Seconds to wait before trying again.', schema: { type: 'integer', minimum: 1 } },
    'X-Call-Units-Cost': { description: 'Call units this call cost (a read: 1 per 16 KB returned, at least 1).', schema: { type: 'integer' } },
    'X-Call-Units-Remaining': { description: 'Call units left today on the seat after this call.', schema: { type: 'integer' } },
  },
  schemas: {
    Budget: {
      type: 'object', required: ['limit', 'used', 'resets_at'],
      properties: { limit: { type: 'integer' }, used: { type: 'integer' }, resets_at: { type: ['string', 'null'], format: 'date-time' } },
    },
  } as Record<string, JsonSchema>,
};

const TAGS = [
  ['Channels', 'Channels and their members (spec: Channels).'],
  ['Messages', 'Messages, threads and reactions; a direct message is a channel (spec: Messages).'],
  ['Direct messages', 'Opening and listing direct messages.'],
  ['Members and identities', 'Members, identities and API keys of the account.'],
  ['Account', 'The account, background jobs and the audit log.'],
  ['Approvals', 'What a credential asked to destroy, decided by a person (spec: Authentication 10).'],
  ['Search', 'Searching messages.'],
  ['Webhooks', 'Webhook endpoints and their lifecycle.'],
  ['Webhook deliveries', 'Test events, the delivery log and replays.'],
  ['Sign-in', "The web app's sign-in, on the web host."],
  ['Probes', 'Unauthenticated probes for load balancers.'],
  ['Reference', 'This document and its readable form.'],
] as const;

const INFO_DESCRIPTION = [
  'The REST surface of the team messaging service, generated from its route declarations. Both hosts serve the same paths '
    + 'with the same rules; they differ only in what authenticates a call (see the security schemes).',
  '**Errors**: `{ "error": { "code", "message", ... } }`. `code` is stable, `message` is for people, `reason` narrows some 400 and 403 errors; '
    + 'each operation lists the codes and reasons it can answer. Every response carries `X-Request-Id`.',
  '**Lists** take `limit` (1..200, default 50) and `cursor`, and answer `{ "data": [...], "next_cursor": string | null }`; '
    + 'pass `next_cursor` as `cursor` for the next page.',
  '**Limits** (per seat, spec: Limits): every call under `/accounts/{accountId}` counts against the calls per minute (`RateLimit`, '
    + '`RateLimit-Policy`; over it: 429 `rate_limited` with `Retry-After`) and the daily call units (429 `budget_exceeded`).',
  '**Versioning**: paths carry no version; changes are additive (clients ignore unknown fields).',
].join('\n\n');

export interface DocumentOptions {
  /** the servers to name (default both hosts, as configured by default) */
  servers?: ServerEntry[];
  /** the URL of each host, for the operations served on one host only */
  hosts?: Record<Host, ServerEntry>;
}

/** The OpenAPI 3.1 document, generated from the route declarations (docs/api.md "The OpenAPI document"). */
export function buildDocument(options: DocumentOptions = {}): JsonSchema {
  const hostServers = options.hosts ?? DEFAULT_SERVERS;
  const components: Record<string, JsonSchema> = {};
  const paths: Record<string, Record<string, JsonSchema>> = {};
  for (const r of ROUTES as readonly RouteDeclaration[]) {
    (paths[r.path] ??= {})[r.method.toLowerCase()] = operationOf(r, components, hostServers);
  }
  const webhooks = webhooksSection(components);
  return {
    openapi: '3.1.1',
    info: {
      title: 'Team messaging service',
      version: '1',
      description: INFO_DESCRIPTION,
      license: { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' },
    },
    servers: options.servers ?? [DEFAULT_SERVERS.api, DEFAULT_SERVERS.web],
    tags: [...TAGS.map(([name, description]) => ({ name, description })), ...webhooks.tags],
    paths,
    webhooks: webhooks.webhooks,
    components: {
      securitySchemes: { ...COMMON_COMPONENTS.securitySchemes, ...webhooks.securitySchemes },
      parameters: { ...COMMON_COMPONENTS.parameters, ...webhooks.parameters },
      headers: COMMON_COMPONENTS.headers,
      schemas: Object.fromEntries(Object.entries({ ...COMMON_COMPONENTS.schemas, ...components }).sort(([a], [b]) => a.localeCompare(b))),
    },
  };
}
