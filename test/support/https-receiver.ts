import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import os from 'node:os';
import path from 'node:path';

/**
 * A real HTTPS receiver on loopback for webhook tests, with its own throwaway CA made by the
 * openssl CLI at test time (CA + a leaf for localhost and 127.0.0.1). Point config.webhookCaFile
 * at `caFile`. Records each request's raw body and headers; answers are scriptable.
 */
export type Answer =
  | { status: number; delayMs?: number; headers?: Record<string, string>; body?: string }
  | { hang: true }
  | { reset: true }
  | { redirect: string; status?: number };

export interface Received {
  body: string;
  headers: IncomingHttpHeaders;
  path: string;
  at: number;
}

export interface Receiver {
  port: number;
  caFile: string;
  /** https://localhost:<port><path> */
  url(path?: string): string;
  received: Received[];
  /** answers for the next requests, in order; then `fallback` */
  script(...answers: Answer[]): void;
  fallback: Answer;
  /** requests received and not yet answered (or closed), and the most seen at once */
  inFlight: number;
  maxInFlight: number;
  /** the same per request path (one endpoint each in the tests) */
  maxInFlightByPath: Map<string, number>;
  /** resolves when `n` requests have arrived (across all paths) */
  waitFor(n: number, timeoutMs?: number): Promise<Received[]>;
  close(): Promise<void>;
}

let certDir: string | null = null;

/** One CA and leaf per test process (openssl is slow-ish); a fresh one each process. */
export function testCertificates(): { dir: string; caFile: string; keyFile: string; certFile: string } {
  if (!certDir) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'webhook-ca-'));
    const run = (...args: string[]) => execFileSync('/usr/bin/openssl', args, { cwd: dir, stdio: 'pipe' });
    run('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=teamchat test CA',
      '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign');
    run('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'leaf.key', '-out', 'leaf.csr', '-subj', '/CN=localhost');
    fs.writeFileSync(path.join(dir, 'leaf.ext'), 'subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n');
    run('x509', '-req', '-in', 'leaf.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'leaf.pem', '-days', '2', '-extfile', 'leaf.ext');
    certDir = dir;
  }
  return { dir: certDir, caFile: path.join(certDir, 'ca.pem'), keyFile: path.join(certDir, 'leaf.key'), certFile: path.join(certDir, 'leaf.pem') };
}

export async function startReceiver(options: { port?: number } = {}): Promise<Receiver> {
  const certs = testCertificates();
  const received: Received[] = [];
  const queue: Answer[] = [];
  const waiters: Array<{ n: number; resolve: (r: Received[]) => void }> = [];
  const sockets = new Set<Socket>();
  const hanging = new Set<ServerResponse>();
  const byPath = new Map<string, number>();
  /**
   * Ends a request's count of "in flight" (the request's `done`). Called as its answer starts to
   * be written: the sender cannot have the answer before that, while 'finish' (kept as a fallback
   * with 'close') may come only after the sender has the answer and sent its next request, on a
   * loaded machine, and count one request too many.
   */
  const answered = new WeakMap<ServerResponse, () => void>();

  const answer = (a: Answer, res: ServerResponse) => {
    if ('hang' in a) {
      hanging.add(res);
      return;
    }
    if ('reset' in a) {
      res.socket?.destroy();
      return;
    }
    if ('redirect' in a) {
      answered.get(res)?.();
      res.writeHead(a.status ?? 302, { location: a.redirect }).end();
      return;
    }
    const send = () => {
      answered.get(res)?.();
      res.writeHead(a.status, { 'content-type': 'text/plain', ...(a.headers ?? {}) }).end(a.body ?? 'ok');
    };
    if (a.delayMs) setTimeout(send, a.delayMs);
    else send();
  };

  const server = https.createServer({ key: fs.readFileSync(certs.keyFile), cert: fs.readFileSync(certs.certFile) }, (req, res) => {
    const p = req.url ?? '/';
    receiver.inFlight += 1;
    receiver.maxInFlight = Math.max(receiver.maxInFlight, receiver.inFlight);
    byPath.set(p, (byPath.get(p) ?? 0) + 1);
    receiver.maxInFlightByPath.set(p, Math.max(receiver.maxInFlightByPath.get(p) ?? 0, byPath.get(p)!));
    let counted = true;
    const done = () => {
      if (counted) {
        receiver.inFlight -= 1;
        byPath.set(p, byPath.get(p)! - 1);
      }
      counted = false;
    };
    answered.set(res, done);
    res.on('finish', done);
    res.on('close', done);
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ body: Buffer.concat(chunks).toString('utf8'), headers: req.headers, path: req.url ?? '/', at: Date.now() });
      for (const w of [...waiters]) {
        if (received.length >= w.n) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve(received.slice());
        }
      }
      answer(queue.shift() ?? receiver.fallback, res);
    });
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;

  const receiver: Receiver = {
    port,
    caFile: certs.caFile,
    url: (p = '/hook') => `https://localhost:${port}${p}`,
    received,
    fallback: { status: 200 },
    inFlight: 0,
    maxInFlight: 0,
    maxInFlightByPath: new Map(),
    script: (...answers) => {
      queue.push(...answers);
    },
    waitFor: (n, timeoutMs = 20_000) =>
      new Promise((resolve, reject) => {
        if (received.length >= n) {
          resolve(received.slice());
          return;
        }
        const timer = setTimeout(() => reject(new Error(`receiver got ${received.length} of ${n} requests in ${timeoutMs} ms`)), timeoutMs);
        waiters.push({ n, resolve: (r) => { clearTimeout(timer); resolve(r); } });
      }),
    close: async () => {
      for (const res of hanging) res.destroy();
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return receiver;
}
