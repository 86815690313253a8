import type { ErrorCode } from '@teamchat/core';
import { isAccountRoute, type RouteDeclaration } from './route';

/** code → the reasons it may carry (empty: none); a code absent cannot be answered. */
export type ErrorTable = Partial<Record<ErrorCode, string[]>>;

/**
 * Every error a route can answer: its own (`errors`), and those of its kind, in one place:
 * - any route: 400 `invalid_request` for what the HTTP parser refuses before routing
 *   (`headers_too_large`, `malformed_request`, `request_timeout`; docs/api.md "Hostile input");
 * - any route after the body parser: 400 `invalid_request` (malformed or oversize body, reason
 *   `body_too_large`; docs/api.md "Hostile input"), and the unique-clash reasons of the one error
 *   handler; any route: 500 `internal`;
 * - authenticated: 401 `unauthorized` (`wrong_host`), 403 `forbidden` `csrf` (the web host's cookie);
 * - under an account: 404 `not_found` (the account), 403 `not_a_member`, `read_only`, `suspended`,
 *   429 `rate_limited` and `budget_exceeded` (spec: Limits);
 * - a scope: 403 `insufficient_scope` (credential) or `forbidden` `role` (web session);
 * - web session only: 403 `forbidden` `web_session_required`;
 * - a list: 400 `invalid_cursor`; a creating POST: 409 `idempotency_conflict`;
 * - a change under an account: 403 `insufficient_scope` `read_only_credential`;
 * - past the probes: 500 `internal` `statement_timeout` (the database's time bound) and
 *   `database_unavailable` (it did not answer at all).
 */
export function errorsOf(r: RouteDeclaration): ErrorTable {
  const table: ErrorTable = {};
  const add = (code: ErrorCode, ...reasons: string[]) => {
    const list = (table[code] ??= []);
    for (const reason of reasons) if (!list.includes(reason)) list.push(reason);
  };
  const probe = r.access === 'public' && !r.path.startsWith('/auth/');
  // Any route: what the HTTP parser refuses before routing (answerClientErrors, apps/api).
  add('invalid_request', 'headers_too_large', 'malformed_request', 'request_timeout');
  if (!probe) add('invalid_request', 'body_too_large', 'name_taken', 'email_taken', 'already_exists');
  if (r.access !== 'public') {
    add('unauthorized', 'wrong_host');
    add('forbidden', 'csrf');
  }
  if (isAccountRoute(r)) {
    // A read-only credential changes nothing, whatever its scopes (docs/api.md "Read-only credentials").
    if (r.method !== 'GET') add('insufficient_scope', 'read_only_credential');
    add('not_found');
    add('not_a_member');
    add('read_only');
    add('suspended');
    add('rate_limited');
    add('budget_exceeded');
  }
  if (r.scope) {
    add('insufficient_scope');
    add('forbidden', 'role');
  }
  if (r.access === 'web_session' && isAccountRoute(r)) add('forbidden', 'web_session_required');
  if (r.list) add('invalid_cursor');
  if (r.creating) add('idempotency_conflict');
  for (const [code, reasons] of Object.entries(r.errors ?? {})) add(code as ErrorCode, ...(reasons ?? []));
  // The database's time bound (DB_STATEMENT_TIMEOUT_MS): 500 with reason statement_timeout and
  // Retry-After; a database that does not answer at all: database_unavailable, with Retry-After.
  if (!probe) add('internal', 'statement_timeout', 'database_unavailable');
  else add('internal');
  return table;
}
