import type { Express } from 'express';
import Joi from 'joi';
import { REFUSALS, ROUTES, expressPath, hostsOf, type Host, type RouteDeclaration, type RouteId } from '@teamchat/contract';

export type { Host };
export type Method = 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE' | 'ALL';

/**
 * Every mounted route of both hosts, from the route declarations (packages/contract): the
 * hostile-input properties run one property per row and host, aiming at the body fields and
 * query parameters each declaration's schemas name. `routes.test.ts` checks the mounted routes
 * are exactly these. A new route needs nothing here, only a valid body in EXAMPLES if it takes one.
 */
export interface RouteRow {
  method: Method;
  /** the Express path template, as mounted: `/accounts/:accountId/channels/:channelId` */
  path: string;
  hosts: readonly Host[];
  /** body fields the route reads; the generators aim wrong types and hostile strings at them */
  body?: string[];
  /** a valid body (from the fixture's valid values), which the generators mutate one field at a time */
  example?: (v: Record<string, string>) => Record<string, unknown>;
  /** query parameters beyond limit/cursor */
  query?: string[];
  /** a list: takes `limit` and `cursor` (forged and truncated cursors are generated) */
  list?: boolean;
  /** ends the caller's web session when it succeeds: each run gets a session of its own */
  endsSession?: boolean;
  /** runs for this row, when the default is too many (sign-in hashes a password on every call) */
  runs?: number;
}

/** What only the fuzzing needs, by route id: valid bodies to mutate, and the runs of costly routes. */
const EXTRAS: Partial<Record<RouteId, Pick<RouteRow, 'example' | 'endsSession' | 'runs'>>> = {
  signIn: { example: (v) => ({ email: v.email, password: v.password }), runs: 20 },
  signOut: { endsSession: true, runs: 15 },
  registerAgent: { example: () => ({ name: 'bot', scopes: ['channels:read'] }) },
  createChannel: { example: () => ({ name: 'fuzz', topic: 't', client_ref: 'r' }) },
  updateChannel: { example: () => ({ topic: 'new topic' }) },
  addChannelMember: { example: (v) => ({ identity_id: v.identityId }) },
  postMessage: { example: (v) => ({ text: 'hello', thread_ts: v.ts }) },
  editMessage: { example: () => ({ text: 'edited' }) },
  openDm: { example: (v) => ({ members: [v.identityId] }) },
  // The example URL is refused by the URL guard (loopback), so no run ever sends traffic;
  // endpoint and delivery ids are generated (no real endpoint), so test and replay answer 404.
  registerWebhookEndpoint: { example: () => ({ url: 'https://localhost/hook', events: ['message.posted'], channels: 'all' }) },
  updateWebhookEndpoint: { example: () => ({ enabled: false }) },
  replayFailedWebhookDeliveries: { example: () => ({ since: '2025-01-01T00:00:00.000Z' }) },
  reserveUpload: { example: () => ({ name: 'fuzz.txt', size: 3, content_type: 'text/plain' }) },
  createApiKey: { example: () => ({ scopes: ['audit:read'] }) },
  // Mirrors: the example URL is refused by the URL guard, as above; mirror ids are generated, so test answers 404.
  createMirror: { example: (v) => ({ url: 'https://localhost/hook', channels: [v.channelId], format: 'slack' }) },
  updateMirror: { example: () => ({ enabled: false }) },
  // Static answers that take no input (the script is 1 MB): a few runs are enough.
  getOpenApiDocument: { runs: 10 },
  getApiReference: { runs: 10 },
  getApiReferenceScript: { runs: 5 },
};

const keysOf = (schema: Joi.PartialSchemaMap | Joi.ObjectSchema | undefined): string[] => {
  if (!schema) return [];
  if (Joi.isSchema(schema)) return Object.keys((schema as Joi.ObjectSchema).describe().keys ?? {});
  return Object.keys(schema);
};

function rowOf(r: RouteDeclaration): RouteRow {
  const body = keysOf(r.request?.body);
  const query = keysOf(r.request?.query).filter((k) => k !== 'limit' && k !== 'cursor');
  return {
    method: r.method,
    path: expressPath(r.path),
    hosts: hostsOf(r),
    ...(body.length ? { body } : {}),
    ...(query.length ? { query } : {}),
    ...(r.list ? { list: true } : {}),
    ...EXTRAS[r.id as RouteId],
  };
}

export const ROUTE_ROWS: RouteRow[] = [
  ...(ROUTES as readonly RouteDeclaration[]).map(rowOf),
  ...REFUSALS.map((r): RouteRow => ({ method: 'ALL', path: r.path, hosts: r.hosts })),
];

export const rowsFor = (host: Host) => ROUTE_ROWS.filter((r) => r.hosts.includes(host));

interface LayerLike {
  route?: { path: string | string[]; methods: Record<string, boolean> };
  handle?: { stack?: LayerLike[] };
  rawPath?: string | string[];
}

const join = (prefix: string, path: string) => (path === '/' ? prefix : prefix.replace(/\/$/, '') + path);

/** `METHOD path` of every route an app mounts, found by walking Express's router stack. */
export function mountedRoutes(app: Express): string[] {
  const out: string[] = [];
  const walk = (stack: LayerLike[], prefix: string) => {
    for (const layer of stack) {
      if (layer.route) {
        const paths = Array.isArray(layer.route.path) ? layer.route.path : [layer.route.path];
        // Express 5's app.all() registers every method of node's list one by one.
        const methods = Object.keys(layer.route.methods);
        const shown = methods.length > 20 || methods.includes('_all') ? ['ALL'] : methods.map((m) => m.toUpperCase());
        for (const p of paths) for (const m of shown) out.push(`${m} ${join(prefix, p) || '/'}`);
      } else if (layer.handle?.stack) {
        const mount = typeof layer.rawPath === 'string' ? layer.rawPath : '/';
        walk(layer.handle.stack, join(prefix, mount));
      }
    }
  };
  walk((app as unknown as { router: { stack: LayerLike[] } }).router.stack, '');
  return [...new Set(out)].sort();
}
