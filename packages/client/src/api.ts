import createClient, { type Client } from 'openapi-fetch';
import type { components, operations, paths } from './generated/api';

export type { components, operations, paths };

/** The typed REST client: every path, parameter, body and answer typed from docs/openapi.json. */
export type ApiClient = Client<paths>;

export interface ApiClientOptions {
  /** the host's base URL: the API host for keys and agent tokens, the web host for a web session */
  baseUrl: string;
  /** headers sent on every call (Authorization, X-Request-Id, ...) */
  headers?: Record<string, string>;
  /** the fetch to use (default globalThis.fetch) */
  fetch?: (input: Request) => Promise<Response>;
}

/** A path parameter that cannot be one segment of a path. */
export class PathParameterError extends Error {
  constructor(readonly parameter: string) {
    super(`Path parameter ${parameter} must be a non-empty value other than "." and "..".`);
    this.name = 'PathParameterError';
  }
}

/**
 * Fills `{name}` in a path template with each value percent-encoded as one segment. An empty
 * value, "." or ".." is refused: URL resolution would turn it into another path (`../x`).
 */
export function pathOf(template: string, params: Record<string, unknown>): string {
  return template.replace(/\{(\w+)\}/g, (_m, name: string) => {
    const value = String(params[name] ?? '');
    if (value === '' || value === '.' || value === '..') throw new PathParameterError(name);
    return encodeURIComponent(value);
  });
}

export function createApiClient(options: ApiClientOptions): ApiClient {
  return createClient<paths>({ baseUrl: options.baseUrl, headers: options.headers, fetch: options.fetch, pathSerializer: pathOf });
}
