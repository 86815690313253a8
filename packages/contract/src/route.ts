import type Joi from 'joi';
import type { ErrorCode } from '@teamchat/core';

/** The two public hosts (spec: Hosts): `api` takes API keys and agent tokens, `web` the web session. */
export type Host = 'api' | 'web';
export const HOSTS: readonly Host[] = ['api', 'web'];

export type Method = 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';

/**
 * Who may call a route.
 * - `public`: no credential at all (probes, the document, sign-in).
 * - `credential`: an API key or agent token on the API host, or a web session on the web host
 *   (spec: Authentication; both hosts serve the same paths).
 * - `web_session`: "web session only" (spec: Authentication 9): a credential gets 403
 *   `forbidden`, reason `web_session_required`.
 */
export type Access = 'public' | 'credential' | 'web_session';

/** The Joi schemas a route validates its input with (apps/api `validate`). */
export interface RequestSchemas {
  params?: Joi.PartialSchemaMap;
  query?: Joi.PartialSchemaMap;
  body?: Joi.PartialSchemaMap | Joi.ObjectSchema;
  headers?: Joi.PartialSchemaMap;
}

/** Response headers a route may send, beyond those every response carries (X-Request-Id). */
export type ResponseHeader = 'ETag' | 'Idempotent-Replayed' | 'Cache-Control' | 'Set-Cookie';

export interface ResponseDeclaration {
  description: string;
  /** the body's schema (JSON unless `contentType` says otherwise); absent for an empty body (204) */
  body?: Joi.Schema;
  /** default `application/json` */
  contentType?: string;
  headers?: readonly ResponseHeader[];
}

/**
 * The errors a route can answer beyond those of its kind (which `errorsOf` adds: authentication,
 * account state, limits, validation, ...): each code with the `reason`s it may carry (an empty list
 * when it carries none).
 */
export type RouteErrors = Partial<Record<ErrorCode, readonly string[]>>;

/**
 * One route of a public host, declared once: the Express router (apps/api), the OpenAPI document,
 * the hostile-input route table and the MCP tool table are all built from these (docs/api.md
 * "How a route is declared").
 */
export interface RouteDeclaration {
  /** unique, camelCase: the OpenAPI operationId and the key of the route's handler */
  id: string;
  method: Method;
  /** OpenAPI template: `/accounts/{accountId}/channels/{channelId}` */
  path: string;
  /** the hosts serving it (default both) */
  hosts?: readonly Host[];
  /** the OpenAPI tag (the reference's section) */
  tag: string;
  summary: string;
  description?: string;
  access: Access;
  /** the scope needed (spec: Authentication 4-8); a web session's role grants it or the call is `forbidden` */
  scope?: string;
  /** role rules beyond the scope, as the reference states them */
  roles?: string;
  /** a creating POST: accepts `Idempotency-Key` (spec: Limits rule 4) */
  creating?: boolean;
  /** repeating the same request changes nothing more (HTTP's idempotent methods, a PUT of a reaction, ...) */
  idempotent: boolean;
  /** a list: takes `limit` and `cursor`, answers `{ data, next_cursor }` (400 `invalid_cursor`) */
  list?: boolean;
  /** takes `If-Match` (412 `stale` / 409 `edit_conflict` when the resource changed) */
  ifMatch?: boolean;
  request?: RequestSchemas;
  /** every success status the route answers, with its body */
  responses: Readonly<Record<number, ResponseDeclaration>>;
  errors?: RouteErrors;
}

/** Declares a route (identity at run time; keeps the literal `id` for the handler map's type). */
export function route<const R extends RouteDeclaration>(declaration: R): R {
  return declaration;
}

/**
 * Paths a host refuses outright (no operation behind them), mounted by the same builder: the
 * operations port's /metrics answers 404 here, and /auth/* on the API host names the web host.
 * Not in the document.
 */
export interface Refusal {
  id: string;
  /** Express 5 path syntax */
  path: string;
  hosts: readonly Host[];
}

export const hostsOf = (r: { hosts?: readonly Host[] }): readonly Host[] => r.hosts ?? HOSTS;

/** `/accounts/{accountId}/channels/{channelId}` → `/accounts/:accountId/channels/:channelId` (Express). */
export const expressPath = (path: string): string => path.replace(/\{([A-Za-z0-9_]+)\}/g, ':$1');

/** Routes under the account run after its context and limits (apps/api `buildRouter`). */
export const ACCOUNT_PREFIX = '/accounts/{accountId}';
export const isAccountRoute = (r: RouteDeclaration): boolean => r.path === ACCOUNT_PREFIX || r.path.startsWith(`${ACCOUNT_PREFIX}/`);
