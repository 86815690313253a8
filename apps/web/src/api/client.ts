import createClient from 'openapi-fetch';
import type { paths } from '@teamchat/client';
import { currentSession, hasStoredSession, observeAccountState, saveSession } from './session';

/**
 * The one way the app reaches the API: openapi-fetch with the generated `paths` of
 * `packages/client` (`client.GET('/accounts/{accountId}/channels', { params: { path: { accountId } } })`
 * answering `{ data, error, response }`). Same origin, session cookie; every write carries the
 * X-CSRF-Token from sign-in. A 401 forgets the session: the app shows Sign in, saying the person
 * was signed out, and returns them to the page they were on (`?next=`) once they sign in again.
 */
export interface ApiErrorBody {
  error: { code: string; message: string; reason?: string; retry_after?: number; [k: string]: unknown };
}

export type Query = Record<string, string | number | boolean | undefined | null>;

export interface RequestOptions {
  params?: { path?: Record<string, string>; query?: Query };
  body?: unknown;
  headers?: Record<string, string>;
  signal?: AbortSignal;
}

export type FetchResponse<T> =
  | { data: T; error?: undefined; response: Response }
  | { data?: undefined; error: ApiErrorBody; response: Response };

type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** Drops empty filters: the API reads `status=` as a value, the page means "no filter". */
function cleanQuery(query: Query | undefined): Record<string, string | number | boolean> | undefined {
  if (!query) return undefined;
  const out: Record<string, string | number | boolean> = {};
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== null && v !== '') out[k] = v;
  return out;
}

/**
 * The typed client of `packages/client` (openapi-fetch over the OpenAPI document's `paths`), same
 * origin. Its middleware adds what every call of the app needs: `Accept: application/json`, the
 * X-CSRF-Token on writes, and, on the answer, the account's state (the header's banner) and a
 * 401 forgetting the session.
 */
const typed = createClient<paths>({ baseUrl: window.location.origin });
typed.use({
  onRequest({ request }) {
    request.headers.set('Accept', 'application/json');
    if (request.method !== 'GET') {
      const csrf = currentSession()?.csrfToken;
      if (csrf) request.headers.set('X-CSRF-Token', csrf);
    }
    return request;
  },
  async onResponse({ request, response }) {
    const path = new URL(request.url).pathname;
    let code: string | undefined;
    if (!response.ok) {
      try {
        code = ((await response.clone().json()) as ApiErrorBody).error?.code;
      } catch {
        code = undefined;
      }
    }
    observeAccountState(path, response.status, code);
    if (response.status === 401 && !path.startsWith('/auth/') && hasStoredSession()) {
      // the session ended under this tab (signed out elsewhere, expired): say so on Sign in
      saveSession(null, { ended: true });
    }
    return response;
  },
});

/** The pages name a path and the answer's type; the path's template and parameters are the typed client's. */
type Loose = (path: string, init: Record<string, unknown>) => Promise<{ data?: unknown; error?: unknown; response: Response }>;
const loose = typed as unknown as Record<Method, Loose>;

async function call<T>(method: Method, path: string, opts: RequestOptions = {}): Promise<FetchResponse<T>> {
  const r = await loose[method](path, {
    params: { path: opts.params?.path, query: cleanQuery(opts.params?.query) },
    body: opts.body,
    headers: opts.headers,
    signal: opts.signal,
  });
  if (r.response.ok) return { data: r.data as T, response: r.response };
  const error = (r.error as ApiErrorBody | undefined)?.error
    ? (r.error as ApiErrorBody)
    : { error: { code: 'internal', message: `The server answered ${r.response.status}.` } };
  return { error, response: r.response };
}

export const client = {
  GET: <T>(path: string, opts?: RequestOptions) => call<T>('GET', path, opts),
  POST: <T>(path: string, opts?: RequestOptions) => call<T>('POST', path, opts),
  PUT: <T>(path: string, opts?: RequestOptions) => call<T>('PUT', path, opts),
  PATCH: <T>(path: string, opts?: RequestOptions) => call<T>('PATCH', path, opts),
  DELETE: <T>(path: string, opts?: RequestOptions) => call<T>('DELETE', path, opts),
};

/** Thrown by `unwrap` so TanStack Query sees a failed call; carries the API's error body. */
export class ApiError extends Error {
  constructor(readonly body: ApiErrorBody['error'], readonly status: number, readonly retryAfter: number | null) {
    super(body.message);
  }
}

/** When to try again after a 429 (or a 5xx that names it): the Retry-After header, else the body's `retry_after`. */
export function retryAfterOf(response: Response, body: ApiErrorBody['error']): number | null {
  const header = Number(response.headers.get('retry-after'));
  if (Number.isFinite(header) && header > 0) return header;
  return typeof body.retry_after === 'number' ? body.retry_after : null;
}

/** The data of a call, or an ApiError with the API's `message` (shown where the action was taken). */
export async function unwrap<T>(p: Promise<FetchResponse<T>>): Promise<T> {
  const r = await p;
  if (r.error) {
    throw new ApiError(r.error.error, r.response.status, retryAfterOf(r.response, r.error.error));
  }
  return r.data as T;
}

export interface Page<T> {
  data: T[];
  next_cursor: string | null;
}
