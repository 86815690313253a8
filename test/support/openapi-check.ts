import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { ERROR_STATUS } from '@teamchat/core';
import { buildDocument } from '@teamchat/contract';

/** What the check reads of a superagent response. */
export interface ResponseLike {
  status: number;
  headers: Record<string, string | undefined>;
  body: unknown;
  text?: string;
}

type Json = Record<string, any>;

interface Operation { method: string; re: RegExp; path: string; op: Json }
let state: { doc: Json; ajv: Ajv2020; operations: Operation[] } | null = null;

function init() {
  if (state) return state;
  const doc = buildDocument() as Json;
  const ajv = new Ajv2020({ strict: false, allErrors: false, validateFormats: true });
  addFormats(ajv);
  // The document is one schema resource: `#/components/schemas/...` refs resolve inside it.
  ajv.addSchema(doc, 'openapi');
  const operations: Operation[] = [];
  for (const [path, item] of Object.entries(doc.paths as Record<string, Json>)) {
    // Express routes match with or without a trailing slash (non-strict routing).
    const re = new RegExp(`^${path.replace(/\{\w+\}/g, '[^/]+')}/?$`);
    for (const [method, op] of Object.entries(item)) operations.push({ method: method.toUpperCase(), re, path, op });
  }
  state = { doc, ajv, operations };
  return state;
}

const pointer = (...parts: string[]) => parts.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).map(encodeURIComponent).join('/');
const validators = new Map<string, ValidateFunction>();

function validatorFor(ref: string): ValidateFunction {
  let v = validators.get(ref);
  if (!v) {
    v = init().ajv.compile({ $ref: ref });
    validators.set(ref, v);
  }
  return v;
}

/** Any error body of the spec's table: what a path no operation serves answers. */
const ANY_ERROR = {
  type: 'object', required: ['error'], additionalProperties: false,
  properties: { error: { type: 'object', required: ['code', 'message'], properties: { code: { enum: Object.keys(ERROR_STATUS) }, message: { type: 'string' } } } },
};
let anyError: ValidateFunction | null = null;

const isJson = (res: ResponseLike) => /^application\/json/.test(res.headers['content-type'] ?? '');

/**
 * Why `res` does not match the document for `METHOD url` on `host`, or null when it does.
 * A path or method no operation of this host serves must answer an error body of the spec.
 */
export function responseProblem(host: 'api' | 'web', method: string, url: string, res: ResponseLike): string | null {
  const { operations } = init();
  // The path as sent, dot segments kept (URL would resolve `/mirrors/..` to the parent, which is
  // not what the server routed: Express matches `..` as a path parameter).
  const path = url.replace(/^[a-z][a-z0-9+.-]*:\/\/[^/]*/i, '').split(/[?#]/)[0] || '/';
  const m = method.toUpperCase() === 'HEAD' ? 'GET' : method.toUpperCase();
  const found = operations.find((o) => o.method === m && o.re.test(path) && (o.op['x-hosts'] as string[]).includes(host));
  const where = `${method.toUpperCase()} ${path} (${host} host) answered ${res.status}`;
  if (!found) {
    if (!isJson(res)) return null; // Node's own answers where the server has no answerClientErrors (supertest's) carry no JSON body
    anyError ??= init().ajv.compile(ANY_ERROR);
    if (res.status < 400 || !anyError(res.body)) return `${where}, but no operation serves it and the body is not an error body: ${JSON.stringify(res.body).slice(0, 300)}`;
    return null;
  }
  const response = (found.op.responses as Json)[String(res.status)];
  if (!response) return `${where}: a status operation ${found.op.operationId} does not declare (it declares ${Object.keys(found.op.responses).join(', ')})`;
  const content = response.content as Json | undefined;
  if (method.toUpperCase() === 'HEAD' || res.status === 204) return null;
  if (!content) return res.text ? `${where} with a body, but ${found.op.operationId} declares none for ${res.status}` : null;
  if (!content['application/json']) return null; // HTML and other media types are not checked here
  if (!isJson(res)) return `${where} with Content-Type ${res.headers['content-type']}, not JSON`;
  const ref = `openapi#/${pointer('paths', found.path, m.toLowerCase(), 'responses', String(res.status), 'content', 'application/json', 'schema')}`;
  const validate = validatorFor(ref);
  if (validate(res.body)) return null;
  const errors = (validate.errors ?? []).slice(0, 5).map((e) => `${e.instancePath || '(body)'} ${e.message}${e.params ? ` ${JSON.stringify(e.params)}` : ''}`);
  return `${where}: the body does not match ${found.op.operationId}'s ${res.status} schema in the OpenAPI document: ${errors.join('; ')}\nbody: ${JSON.stringify(res.body).slice(0, 600)}`;
}
