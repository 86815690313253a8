import { createHmac, timingSafeEqual } from 'node:crypto';
import fs from 'node:fs';
import https from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { testCertificates } from '../../support/https-receiver';

/**
 * The fault suite's HTTPS receiver on loopback (the throwaway test CA of
 * test/support/https-receiver.ts). Unlike that one, each path (one endpoint each) has its own
 * behaviour, and it does what a careful receiver does (spec: Signature): it verifies
 * `X-Service-Signature` against the endpoint's secret over the raw body, then dedupes on the
 * event id (`webhook-id`, equal to the body's `id`). Only verified requests count as received.
 */
export type Behaviour =
  | { status: number; delayMs?: number }
  | { hang: true }
  | { reset: true };

export interface PathLog {
  /** every verified request, in arrival order: event id, delivery id, attempt */
  requests: Array<{ eventId: string; deliveryId: string; attempt: number; at: number }>;
  /** event ids answered 2xx (what the receiver has "processed") */
  accepted: Set<string>;
  /** 2xx answers per event id (above 1: a duplicate the receiver deduped) */
  acceptedTimes: Map<string, number>;
  /** event ids seen at all (any answer) */
  seen: Set<string>;
  /** requests whose signature did not verify (must stay 0) */
  badSignatures: number;
}

export interface FaultReceiver {
  port: number;
  caFile: string;
  url(path: string): string;
  /** registers a path: its signing secret and how it answers (changeable at any time) */
  route(path: string, secret: string, behaviour?: Behaviour): void;
  behave(path: string, behaviour: Behaviour): void;
  log(path: string): PathLog;
  /** client-side ports of the requests received and not yet answered (to tell whose attempts are in flight) */
  openRemotePorts(): number[];
  close(): Promise<void>;
}

function verify(secret: string, header: string | undefined, body: string): boolean {
  if (!header) return false;
  const parts = header.split(',');
  const t = parts.find((p) => p.startsWith('t='))?.slice(2);
  if (!t) return false;
  const want = createHmac('sha256', Buffer.from(secret, 'utf8')).update(`${t}.${body}`).digest();
  if (Math.abs(Date.now() / 1000 - Number(t)) > 300) return false; // spec: five minutes' tolerance
  return parts.filter((p) => p.startsWith('v1=')).some((p) => {
    const got = Buffer.from(p.slice(3), 'hex');
    return got.length === want.length && timingSafeEqual(got, want);
  });
}

export async function startFaultReceiver(): Promise<FaultReceiver> {
  const certs = testCertificates();
  const routes = new Map<string, { secret: string; behaviour: Behaviour; log: PathLog }>();
  const sockets = new Set<Socket>();
  const hanging = new Set<ServerResponse>();
  const open = new Map<ServerResponse, number>();

  const handle = (req: IncomingMessage, res: ServerResponse, body: string) => {
    const route = routes.get(req.url ?? '');
    if (!route) {
      res.writeHead(404).end();
      return;
    }
    const h = req.headers;
    if (!verify(route.secret, h['x-service-signature'] as string | undefined, body)) {
      route.log.badSignatures += 1;
      res.writeHead(400).end('bad signature');
      return;
    }
    const eventId = String(h['webhook-id']);
    // The body's id and the header's must agree, or the dedupe key would be wrong.
    if ((JSON.parse(body) as { id: string }).id !== eventId) route.log.badSignatures += 1;
    route.log.requests.push({ eventId, deliveryId: String(h['x-service-delivery']), attempt: Number(h['x-service-attempt']), at: Date.now() });
    route.log.seen.add(eventId);
    open.set(res, req.socket.remotePort ?? 0);
    res.on('close', () => open.delete(res));
    res.on('finish', () => open.delete(res));
    const b = route.behaviour;
    if ('hang' in b) {
      hanging.add(res);
      res.on('close', () => hanging.delete(res));
      return;
    }
    if ('reset' in b) {
      // A TCP RST on the connection under TLS (the TLS socket's own handle cannot be reset).
      const tcp = (res.socket as unknown as { _parent?: Socket } | null)?._parent;
      if (tcp) tcp.resetAndDestroy();
      else res.socket?.destroy();
      return;
    }
    const send = () => {
      if (res.destroyed) return;
      if (b.status >= 200 && b.status < 300) {
        route.log.accepted.add(eventId);
        route.log.acceptedTimes.set(eventId, (route.log.acceptedTimes.get(eventId) ?? 0) + 1);
      }
      res.writeHead(b.status, { 'content-type': 'text/plain' }).end('ok');
    };
    if (b.delayMs) setTimeout(send, b.delayMs);
    else send();
  };

  const server = https.createServer({ key: fs.readFileSync(certs.keyFile), cert: fs.readFileSync(certs.certFile) }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => handle(req, res, Buffer.concat(chunks).toString('utf8')));
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  const get = (path: string) => {
    const r = routes.get(path);
    if (!r) throw new Error(`no receiver route ${path}`);
    return r;
  };
  return {
    port,
    caFile: certs.caFile,
    url: (path) => `https://localhost:${port}${path}`,
    route: (path, secret, behaviour = { status: 200 }) => {
      routes.set(path, { secret, behaviour, log: { requests: [], accepted: new Set(), acceptedTimes: new Map(), seen: new Set(), badSignatures: 0 } });
    },
    behave: (path, behaviour) => {
      get(path).behaviour = behaviour;
    },
    log: (path) => get(path).log,
    openRemotePorts: () => [...open.values()],
    close: async () => {
      for (const res of hanging) res.destroy();
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
