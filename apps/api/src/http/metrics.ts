import type { NextFunction, Request, Response } from 'express';
import { depsOf, locals } from './locals';

/** Label of requests that matched no route (404s, refusals before routing): never the raw path. */
export const UNMATCHED_ROUTE = 'unmatched';

/** A mount segment is a lowercase word; anything else left in baseUrl is a value (an id). */
const STATIC_SEGMENT = /^[a-z][a-z0-9-]*$/;

/**
 * The route template of a request: the mount path (req.baseUrl, with the values of its
 * parameters put back as `:name`) joined with the matched route's path. Computed when Express
 * dispatches the route, the only moment both are set (a router restores baseUrl on the way out).
 */
function template(baseUrl: string, params: Record<string, unknown>, routePath: unknown): string {
  const byValue = new Map<string, string>();
  for (const [name, value] of Object.entries(params ?? {})) if (typeof value === 'string') byValue.set(value, name);
  const base = baseUrl
    .split('/')
    .map((seg) => {
      if (seg === '') return seg;
      let decoded = seg;
      try { decoded = decodeURIComponent(seg); } catch { /* keep it raw */ }
      const name = byValue.get(decoded);
      if (name) return `:${name}`;
      return STATIC_SEGMENT.test(seg) ? seg : ':param';
    })
    .join('/');
  const path = typeof routePath === 'string' ? routePath : String(routePath);
  return (base + (path === '/' && base ? '' : path)) || '/';
}

/** HTTP requests total and latency by route template and status (packages/core metrics). */
export function httpMetrics(req: Request, res: Response, next: NextFunction): void {
  const started = process.hrtime.bigint();
  let route = UNMATCHED_ROUTE;
  let current: unknown;
  // Express sets req.route when it dispatches a route; the setter records the template then.
  Object.defineProperty(req, 'route', {
    configurable: true,
    enumerable: true,
    get: () => current,
    set(value: { path?: unknown } | undefined) {
      current = value;
      if (value && value.path !== undefined) route = template(req.baseUrl, req.params as Record<string, unknown>, value.path);
    },
  });
  res.on('finish', () => {
    const labels = { host: locals(res).host, method: req.method, route, status: String(res.statusCode) };
    const { metrics } = depsOf(req);
    metrics.httpRequestsTotal.inc(labels);
    metrics.httpRequestDurationSeconds.observe(labels, Number(process.hrtime.bigint() - started) / 1e9);
  });
  next();
}
