import type { Express } from 'express';

/**
 * Every mounted route of both hosts, as Express mounts it (docs/api.md, 'Hostile input'). The hostile-input
 * properties run one property per row and host; `routes.test.ts` fails when a route is mounted
 * but missing here (or listed here but no longer mounted). To add a route: add one row, with
 * its body fields so the generators aim hostile values at them.
 */
export type Host = 'api' | 'web';
export type Method = 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE' | 'ALL';

export interface RouteRow {
  method: Method;
  /** the Express path template, as mounted: `/accounts/:accountId/channels/:channelId` */
  path: string;
  /** hosts it is mounted on (default both) */
  hosts?: Host[];
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

const A = '/accounts/:accountId';
const CH = `${A}/channels/:channelId`;
const MSG = `${CH}/messages/:ts`;
const WH = `${A}/webhooks`;
const MIR = `${A}/mirrors`;

export const ROUTES: RouteRow[] = [
  // Outside any account
  { method: 'GET', path: '/healthz' },
  { method: 'GET', path: '/status' },
  { method: 'POST', path: '/auth/sign-in', hosts: ['web'], body: ['email', 'password'], example: (v) => ({ email: v.email, password: v.password }), runs: 20 },
  { method: 'POST', path: '/auth/sign-out', hosts: ['web'], endsSession: true, runs: 15 },
  { method: 'ALL', path: '/auth/{*rest}', hosts: ['api'] },
  { method: 'GET', path: '/readyz' },
  { method: 'ALL', path: '/metrics' },
  // The account, directory, operations
  { method: 'GET', path: A },
  { method: 'GET', path: `${A}/members`, list: true },
  { method: 'GET', path: `${A}/identities`, list: true },
  { method: 'POST', path: `${A}/identities`, body: ['name', 'scopes', 'client_ref'], example: () => ({ name: 'bot', scopes: ['channels:read'] }) },
  { method: 'GET', path: `${A}/api-keys`, list: true },
  { method: 'GET', path: `${A}/jobs/:jobId` },
  { method: 'GET', path: `${A}/audit`, list: true },
  // Channels and members
  { method: 'GET', path: `${A}/channels`, list: true },
  { method: 'POST', path: `${A}/channels`, body: ['name', 'topic', 'client_ref'], example: () => ({ name: 'fuzz', topic: 't', client_ref: 'r' }) },
  { method: 'GET', path: CH },
  { method: 'PATCH', path: CH, body: ['name', 'topic'], example: () => ({ topic: 'new topic' }) },
  { method: 'GET', path: `${CH}/members`, list: true },
  { method: 'POST', path: `${CH}/members`, body: ['identity_id', 'client_ref'], example: (v) => ({ identity_id: v.identityId }) },
  // Messages, threads, reactions
  { method: 'GET', path: `${CH}/messages`, list: true },
  { method: 'POST', path: `${CH}/messages`, body: ['text', 'attachments', 'links', 'thread_ts', 'client_ref'], example: (v) => ({ text: 'hello', thread_ts: v.ts }) },
  { method: 'PATCH', path: MSG, body: ['text', 'attachments', 'links', 'version'], example: () => ({ text: 'edited' }) },
  { method: 'DELETE', path: MSG },
  { method: 'GET', path: `${CH}/threads/:threadTs`, list: true },
  { method: 'PUT', path: `${MSG}/reactions/:emoji` },
  { method: 'DELETE', path: `${MSG}/reactions/:emoji` },
  // DMs and search
  { method: 'GET', path: `${A}/dms`, list: true },
  { method: 'POST', path: `${A}/dms`, body: ['members', 'client_ref'], example: (v) => ({ members: [v.identityId] }) },
  { method: 'GET', path: `${A}/search`, list: true, query: ['q', 'sort', 'channel', 'from', 'after', 'before'] },
  // Files: the local driver's signed upload URL (web host, before authentication), uploads, files
  { method: 'PUT', path: '/uploads/:fileId', hosts: ['web'], query: ['expires', 'signature'] },
  { method: 'POST', path: `${A}/uploads`, body: ['name', 'size', 'content_type'], example: () => ({ name: 'fuzz.txt', size: 3, content_type: 'text/plain' }) },
  { method: 'POST', path: `${A}/uploads/:fileId/complete` },
  { method: 'GET', path: `${A}/files`, list: true },
  { method: 'GET', path: `${A}/files/:fileId` },
  { method: 'GET', path: `${A}/files/:fileId/content` },
  // Approvals (spec: Hosts rule 2, under the account)
  { method: 'GET', path: `${A}/approvals/:approvalId` },
  { method: 'POST', path: `${A}/approvals/:approvalId/approve` },
  { method: 'POST', path: `${A}/approvals/:approvalId/deny` },
  // Webhooks. The example URL is refused by the URL guard (loopback), so no run ever sends traffic;
  // endpoint and delivery ids are generated (no real endpoint), so test and replay answer 404.
  { method: 'GET', path: WH, list: true },
  { method: 'POST', path: WH, body: ['url', 'events', 'channels', 'payload', 'enabled', 'authorization', 'client_ref'], example: () => ({ url: 'https://localhost/hook', events: ['message.posted'], channels: 'all' }) },
  { method: 'GET', path: `${WH}/:endpointId` },
  { method: 'PATCH', path: `${WH}/:endpointId`, body: ['url', 'events', 'channels', 'payload', 'enabled', 'authorization'], example: () => ({ enabled: false }) },
  { method: 'DELETE', path: `${WH}/:endpointId` },
  { method: 'POST', path: `${WH}/:endpointId/reveal` },
  { method: 'POST', path: `${WH}/:endpointId/rotate` },
  { method: 'POST', path: `${WH}/:endpointId/test` },
  { method: 'GET', path: `${WH}/:endpointId/deliveries`, list: true, query: ['status', 'event_type', 'event_id', 'since', 'until'] },
  { method: 'POST', path: `${WH}/:endpointId/deliveries/:deliveryId/replay` },
  // The web app's additive routes (docs/web.md)
  { method: 'GET', path: `${WH}/:endpointId/deliveries/:deliveryId` },
  { method: 'GET', path: `${WH}/:endpointId/replay-failed`, query: ['since'] },
  { method: 'POST', path: `${WH}/:endpointId/replay-failed`, body: ['since'], example: () => ({ since: '2025-01-01T00:00:00.000Z' }) },
  { method: 'GET', path: `${WH}/:endpointId/stats`, query: ['window'] },
  { method: 'POST', path: `${A}/api-keys`, body: ['scopes', 'read_only', 'expires_in_days'], example: () => ({ scopes: ['audit:read'] }) },
  { method: 'POST', path: `${A}/api-keys/:keyId/revoke` },
  { method: 'GET', path: `${A}/usage` },
  { method: 'GET', path: `${A}/approvals` },
  // Channel mirrors (web session only). The example URL is refused by the URL guard, as above; mirror ids are generated, so test answers 404.
  { method: 'GET', path: MIR, list: true },
  { method: 'POST', path: MIR, body: ['url', 'channels', 'format', 'enabled'], example: (v) => ({ url: 'https://localhost/hook', channels: [v.channelId], format: 'slack' }) },
  { method: 'GET', path: `${MIR}/:mirrorId` },
  { method: 'PATCH', path: `${MIR}/:mirrorId`, body: ['url', 'channels', 'format', 'enabled'], example: () => ({ enabled: false }) },
  { method: 'DELETE', path: `${MIR}/:mirrorId` },
  { method: 'GET', path: `${MIR}/:mirrorId/deliveries`, list: true },
  { method: 'POST', path: `${MIR}/:mirrorId/test` },
];

export const rowsFor = (host: Host) => ROUTES.filter((r) => (r.hosts ?? ['api', 'web']).includes(host));

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
