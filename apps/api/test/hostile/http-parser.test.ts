import http from 'node:http';
import net from 'node:net';
import { createApp } from '../../src/app';
import { answerClientErrors } from '../../src/http/client-errors';
import { startHarness, type Harness } from '../../../../test/support/harness';

/**
 * Requests Node's HTTP parser refuses before the app runs are answered in the error shape, with an
 * X-Request-Id (spec: Hosts rule 5), as 400 invalid_request with a reason (docs/api.md "Hostile
 * input"). A real server on loopback, as server.ts makes it; raw bytes over a socket.
 */
let h: Harness;
let server: http.Server;
let port: number;

beforeAll(async () => {
  h = await startHarness({ limitsEnabled: false });
  server = http.createServer(createApp(h.deps, 'api'));
  answerClientErrors(server, h.deps.logger);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as net.AddressInfo).port;
});
afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await h.close();
});

/**
 * Sends `raw` and reads the answer until the server closes the connection; with `keepOpen` the
 * socket is not ended after `raw` (a request left unfinished).
 */
function exchange(raw: string, options: { port?: number; keepOpen?: boolean } = {}): Promise<{ status: number; headers: Record<string, string>; body: any }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(options.port ?? port, '127.0.0.1');
    let answer = '';
    socket.on('data', (c) => { answer += c.toString('utf8'); });
    socket.on('error', reject);
    socket.on('close', () => {
      const [head, body] = answer.split('\r\n\r\n');
      const [statusLine, ...lines] = head.split('\r\n');
      const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body: body ? JSON.parse(body) : null });
    });
    if (options.keepOpen) socket.write(raw);
    else socket.end(raw);
  });
}

describe('Hostile input: what the HTTP parser refuses', () => {
  test('headers over 16 KB → 400 invalid_request, reason headers_too_large, with the limit and an X-Request-Id', async () => {
    const res = await exchange(`GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Padding: ${'a'.repeat(20_000)}\r\n\r\n`);
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.headers['x-request-id']).toMatch(/^req_[0-9a-z]{20}$/);
    expect(res.body).toEqual({ error: { code: 'invalid_request', message: expect.stringMatching(/16384 bytes/), field: 'headers', reason: 'headers_too_large', limit_bytes: 16384 } });
  });

  test('a malformed request line or header → 400 invalid_request, reason malformed_request, with an X-Request-Id', async () => {
    for (const raw of ['NOT HTTP AT ALL\r\n\r\n', 'GET / HTTP/1.1\r\nHost: localhost\r\nBad Header Name: x\r\n\r\n', 'GET / HTTP/1.1\r\nHost: localhost\r\nX-Ctl: a\u0001b\r\n\r\n']) {
      const res = await exchange(raw);
      expect(res.status).toBe(400);
      expect(res.headers['x-request-id']).toMatch(/^req_/);
      expect(res.body).toEqual({ error: { code: 'invalid_request', message: 'The request is not valid HTTP.', reason: 'malformed_request' } });
    }
  });

  test('a well-formed request still reaches the app (here: no credential, 401)', async () => {
    const res = await exchange('GET /accounts/acct_x/channels HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n');
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('unauthorized');
    expect(res.headers['x-request-id']).toMatch(/^req_/);
  });

  test('a request not received in time → 400 invalid_request, reason request_timeout, with an X-Request-Id', async () => {
    // Node's own clock (headersTimeout and requestTimeout, checked every connectionsCheckingInterval),
    // shortened on a server of this test's own.
    const slow = http.createServer({ headersTimeout: 300, requestTimeout: 400, connectionsCheckingInterval: 50 }, createApp(h.deps, 'api'));
    answerClientErrors(slow, h.deps.logger);
    await new Promise<void>((resolve) => slow.listen(0, '127.0.0.1', resolve));
    try {
      const res = await exchange('GET /healthz HTTP/1.1\r\nHost: localhost\r\n', { port: (slow.address() as net.AddressInfo).port, keepOpen: true });
      expect(res.status).toBe(400);
      expect(res.headers['x-request-id']).toMatch(/^req_/);
      expect(res.body).toEqual({ error: { code: 'invalid_request', message: 'The request was not received in time.', reason: 'request_timeout' } });
    } finally {
      await new Promise<void>((resolve) => slow.close(() => resolve()));
    }
  });
});
