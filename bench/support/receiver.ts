/**
 * The webhook bench's HTTPS receiver, in its own process (forked by bench/support/processes.ts):
 * a bare `https.createServer` on loopback with the throwaway test CA's leaf certificate
 * (test/support/https-receiver.ts makes it with the openssl CLI), answering every POST `200 ok`
 * at once. For each request it records the arrival time (the body fully read; epoch ms with
 * sub-millisecond precision, `performance.timeOrigin + performance.now()`, the same clock as the
 * bench process), the `X-Service-Delivery` header and, from the JSON body, the event's `channel.id`,
 * `ts`, `id` and `created_at` (so an arrival can be matched to the post that caused it).
 *
 * A path's first segment can pick a misbehaving receiver (the isolation bench's account A), whose
 * requests are counted (`faulty`) but not recorded as arrivals: `/hang…` never answers (the
 * sender's answer time ends it), `/fail…` answers 500 at once, `/slow9…` answers 200 after 9 s.
 *
 * IPC: `reset` (forget arrivals), `count` (arrivals so far), `arrivals` (all of them), `faulty`
 * (requests to the misbehaving paths so far), `cpu`, `exit`. The first message it sends is `{ id: 0, value: { port, caFile } }`.
 */
import fs from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { testCertificates } from '../../test/support/https-receiver';

export interface Arrival {
  at: number;
  delivery: string;
  eventId: string;
  channel: string;
  ts: string;
  createdAt: string;
}

export type ToReceiver = { cmd: 'reset' } | { cmd: 'count' } | { cmd: 'arrivals' } | { cmd: 'faulty' } | { cmd: 'cpu' } | { cmd: 'exit' };

const now = () => performance.timeOrigin + performance.now();

function main(): void {
  const certs = testCertificates();
  let arrivals: Arrival[] = [];
  let faulty = 0;
  const server = https.createServer({ key: fs.readFileSync(certs.keyFile), cert: fs.readFileSync(certs.certFile) }, (req, res) => {
    const url = req.url ?? '/';
    if (url.startsWith('/hang') || url.startsWith('/fail') || url.startsWith('/slow9')) {
      faulty += 1;
      req.resume();
      req.on('end', () => {
        if (url.startsWith('/fail')) res.writeHead(500, { 'content-type': 'text/plain' }).end('no');
        else if (url.startsWith('/slow9')) setTimeout(() => res.writeHead(200, { 'content-type': 'text/plain' }).end('ok'), 9_000).unref();
        // /hang: no answer; the sender gives up at its answer time
      });
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const at = now();
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
      let body: { id?: string; channel?: { id?: string }; ts?: string; created_at?: string } = {};
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        // the raw baseline's bodies are JSON too; anything else is counted without fields
      }
      arrivals.push({
        at,
        delivery: String(req.headers['x-service-delivery'] ?? ''),
        eventId: body.id ?? '',
        channel: body.channel?.id ?? '',
        ts: body.ts ?? '',
        createdAt: body.created_at ?? '',
      });
    });
  });
  server.keepAliveTimeout = 60_000;
  server.listen(0, '127.0.0.1', () => {
    const { port } = server.address() as AddressInfo;
    process.send!({ id: 0, ok: true, value: { port, caFile: certs.caFile } });
  });
  process.on('message', (msg: ToReceiver & { id: number }) => {
    let value: unknown;
    switch (msg.cmd) {
      case 'reset': arrivals = []; break;
      case 'count': value = arrivals.length; break;
      case 'faulty': value = faulty; break;
      case 'arrivals': value = arrivals; break;
      case 'cpu': value = process.cpuUsage(); break;
      case 'exit':
        server.close();
        setImmediate(() => process.exit(0));
        break;
    }
    process.send!({ id: msg.id, ok: true, value });
  });
}

main();
