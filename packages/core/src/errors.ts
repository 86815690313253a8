/** The spec's stable error codes and the ONE map from code to HTTP status. */
export const ERROR_STATUS = {
  invalid_request: 400,
  invalid_cursor: 400,
  unauthorized: 401,
  forbidden: 403,
  insufficient_scope: 403,
  not_a_member: 403,
  read_only: 403,
  suspended: 403,
  confirmation_required: 403,
  not_found: 404,
  idempotency_conflict: 409,
  edit_conflict: 409,
  stale: 412,
  rate_limited: 429,
  budget_exceeded: 429,
  internal: 500,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

export interface ErrorExtras {
  reason?: string;
  [field: string]: unknown;
}

export class AppError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly extras: ErrorExtras;
  /** Response headers the error must carry (Retry-After, ...). */
  readonly headers: Record<string, string>;

  constructor(code: ErrorCode, message: string, extras: ErrorExtras = {}, headers: Record<string, string> = {}) {
    super(message);
    this.name = 'AppError';
    this.code = code;
    this.status = ERROR_STATUS[code];
    this.extras = extras;
    this.headers = headers;
  }
}

export const errors = {
  invalid: (message: string, extras: ErrorExtras = {}) => new AppError('invalid_request', message, extras),
  notFound: (what = 'resource') => new AppError('not_found', `The ${what} was not found.`),
  unauthorized: (message = 'A valid credential is required.', extras: ErrorExtras = {}) =>
    new AppError('unauthorized', message, extras),
  /** 401 for a bearer credential that is unknown, expired or revoked (spec: Authentication 3); every host and the MCP server. */
  credentialRefused: () => new AppError('unauthorized', 'The credential is unknown, expired or revoked.'),
  notAMember: (what = 'account') => new AppError('not_a_member', `You are not a member of this ${what}.`),
  /** 401, reason wrong_host, naming the host to use (spec: Hosts rule 4); used by the API hosts and the MCP server. */
  wrongHost: (useHost: 'api' | 'web', url: string) =>
    new AppError('unauthorized', `${useHost === 'api' ? 'API keys and agent tokens' : 'Web sessions'} are accepted only on ${url}.`, {
      reason: 'wrong_host', host: url,
    }),
  insufficientScope: (scope: string) =>
    new AppError('insufficient_scope', `This credential lacks the ${scope} scope.`, { required_scope: scope }),
  /** A read-only credential asked to change something (docs/api.md "Read-only credentials"). */
  readOnlyCredential: () =>
    new AppError('insufficient_scope', 'This credential is read-only: it may only read (GET). Use a credential that is not read-only to change anything.', { reason: 'read_only_credential' }),
  /**
   * A uniqueness clash (a taken name, an existing member): the spec has no 409 for it, so it is
   * 400 invalid_request with a `reason` naming the clash and the `field` (docs/api.md, 'Errors': only the spec's codes).
   */
  taken: (message: string, reason: string, field?: string) =>
    new AppError('invalid_request', message, field ? { reason, field } : { reason }),
  /** web-session-only endpoints, and what a credential may never do (spec: enabling a webhook endpoint) */
  webSessionRequired: (message = 'This is available only to a signed-in person on the web host.') =>
    new AppError('forbidden', message, { reason: 'web_session_required' }),
};

/** Fields of the unique indexes a caller's input can collide with, by constraint name. */
const UNIQUE_FIELDS: Record<string, { field: string; reason: string }> = {
  channels_name_uq: { field: 'name', reason: 'name_taken' },
  users_email_uq: { field: 'email', reason: 'email_taken' },
  channels_dm_key_uq: { field: 'members', reason: 'already_exists' },
};

/** The invalid_request a unique violation that escaped a use case becomes (see isUniqueViolation). */
export function uniqueViolationError(err: unknown): AppError {
  let constraint: string | undefined;
  for (let e = err, depth = 0; e && typeof e === 'object' && depth < 3; e = (e as { cause?: unknown }).cause, depth++) {
    constraint ??= (e as { constraint?: string }).constraint;
  }
  const known = constraint ? UNIQUE_FIELDS[constraint] : undefined;
  return errors.taken('That already exists.', known?.reason ?? 'already_exists', known?.field);
}

/**
 * PostgreSQL unique_violation, mapped to 400 invalid_request in one place (the error handler). Drizzle wraps the
 * driver's error in a DrizzleQueryError, so the code may be on `cause`.
 */
export function isUniqueViolation(err: unknown): boolean {
  return sqlStateOf(err) === '23505';
}

/** An error and up to two of its causes (Drizzle wraps pg's error; pg-pool wraps a connect timeout's). */
function* causesOf(err: unknown): Generator<object> {
  for (let e = err, depth = 0; e && typeof e === 'object' && depth < 3; e = (e as { cause?: unknown }).cause, depth++) yield e;
}

/** The PostgreSQL SQLSTATE of a driver error; Drizzle wraps it in DrizzleQueryError's `cause`. */

export function sqlStateOf(err: unknown): string | undefined {
  for (const e of causesOf(err)) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) return code;
  }
  return undefined;
}

/**
 * query_canceled (57014: the connection's statement_timeout cut the statement) and
 * idle_in_transaction_session_timeout (25P03): the PostgreSQL-side bound on how long one request
 * may hold a connection (DB_STATEMENT_TIMEOUT_MS; docs/api.md "Errors").
 */
export function isDatabaseTimeout(err: unknown): boolean {
  const code = sqlStateOf(err);
  return code === '57014' || code === '25P03';
}

/**
 * What a request cut by the database time bound answers: the spec has one server-fault code, so
 * 500 `internal` with `reason: "statement_timeout"` and `Retry-After` (the same request may pass
 * when the database is less busy); the error handler adds `request_id` and `status_url`.
 */
export function databaseTimeoutError(retryAfterS: number): AppError {
  const retryAfter = Math.max(1, Math.ceil(retryAfterS));
  return new AppError(
    'internal',
    'The request took longer than the database allows and was stopped; retry later or narrow it.',
    { reason: 'statement_timeout', retry_after: retryAfter },
    { 'Retry-After': String(retryAfter) },
  );
}

/**
 * The client's own bounds on a server that does not answer (pg's query_timeout and the pool's
 * connection timeout, docs/operations.md "When PostgreSQL does not answer") and a connection the
 * server dropped mid-request: the database is unavailable, not the request at fault.
 */
const DATABASE_UNANSWERED = new Set([
  'Query read timeout',
  'timeout exceeded when trying to connect',
  'Connection terminated due to connection timeout',
  'Connection terminated unexpectedly',
]);

export function isDatabaseUnavailable(err: unknown): boolean {
  for (const e of causesOf(err)) if (e instanceof Error && DATABASE_UNANSWERED.has(e.message)) return true;
  return false;
}

/** Seconds a client is told to wait after the database did not answer: about the client's bound. */
export const DATABASE_UNAVAILABLE_RETRY_AFTER_S = 5;

/**
 * What a request answers when the database did not answer it (isDatabaseUnavailable): 500
 * `internal` (the spec's one server-fault code) with `reason: "database_unavailable"` and
 * `Retry-After`, so a client can tell an outage worth retrying from a fault in its request.
 */
export function databaseUnavailableError(): AppError {
  const retryAfter = DATABASE_UNAVAILABLE_RETRY_AFTER_S;
  return new AppError(
    'internal',
    'The database did not answer in time; retry shortly.',
    { reason: 'database_unavailable', retry_after: retryAfter },
    { 'Retry-After': String(retryAfter) },
  );
}

/** deadlock_detected (40P01) and serialization_failure (40001): PostgreSQL chose a victim; the same statement may simply run again. */
export function isRetryableConflict(err: unknown): boolean {
  const code = sqlStateOf(err);
  return code === '40P01' || code === '40001';
}
