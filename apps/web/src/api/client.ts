import { currentSession, saveSession } from './session';

/**
 * The one way the app reaches the API: the call shape of openapi-fetch
 * (`client.GET('/accounts/{accountId}/channels', { params: { path: { accountId } } })` answering
 * `{ data, error, response }`), so the typed client generated from the OpenAPI document replaces
 * this module without touching the pages. Same origin, session cookie; every write carries the
 * X-CSRF-Token from sign-in. A 401 forgets the session (the app shows Sign in).
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

function buildUrl(path: string, params: RequestOptions['params']): string {
  const filled = path.replace(/\{(\w+)\}/g, (_, name: string) => {
    const v = params?.path?.[name];
    if (v === undefined) throw new Error(`missing path parameter ${name}`);
    return encodeURIComponent(v);
  });
  const search = new URLSearchParams();
  for (const [k, v] of Object.entries(params?.query ?? {})) {
    if (v !== undefined && v !== null && v !== '') search.set(k, String(v));
  }
  const qs = search.toString();
  return qs ? `${filled}?${qs}` : filled;
}

async function call<T>(method: Method, path: string, opts: RequestOptions = {}): Promise<FetchResponse<T>> {
  const headers: Record<string, string> = { Accept: 'application/json', ...opts.headers };
  if (method !== 'GET') {
    const csrf = currentSession()?.csrfToken;
    if (csrf) headers['X-CSRF-Token'] = csrf;
  }
  let body: string | undefined;
  if (opts.body !== undefined) {
    headers['Content-Type'] = 'application/json';
    body = JSON.stringify(opts.body);
  }
  const response = await fetch(buildUrl(path, opts.params), { method, headers, body, credentials: 'same-origin', signal: opts.signal });
  const text = response.status === 204 ? '' : await response.text();
  let parsed: unknown = undefined;
  if (text) {
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = undefined;
    }
  }
  if (response.ok) return { data: parsed as T, response };
  if (response.status === 401 && !path.startsWith('/auth/')) saveSession(null);
  const error = (parsed as ApiErrorBody | undefined)?.error
    ? (parsed as ApiErrorBody)
    : { error: { code: 'internal', message: `The server answered ${response.status}.` } };
  return { error, response };
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

/** The data of a call, or an ApiError with the API's `message` (shown where the action was taken). */
export async function unwrap<T>(p: Promise<FetchResponse<T>>): Promise<T> {
  const r = await p;
  if (r.error) {
    const ra = r.response.headers.get('retry-after');
    throw new ApiError(r.error.error, r.response.status, ra ? Number(ra) : null);
  }
  return r.data as T;
}

export interface Page<T> {
  data: T[];
  next_cursor: string | null;
}
