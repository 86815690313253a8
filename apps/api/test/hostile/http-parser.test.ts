import http from 'node:http';
import net from 'node:net';
import { createApp } from '../../src/app';
import { answerClientErrors } from '../../src/http/client-errors';
import { createHostServer } from '../../src/http/well-formed';
import { startHarness, type Harness } from '../../../../test/support/harness';

/**
 * Requests Node's HTTP parser refuses before the app runs are answered in the error shape, with an
 * X-Request-Id (spec: Hosts rule 5), as 400 invalid_request with a reason (docs/api.md "Hostile
 * input"). A real server on loopback, as server.ts makes it; raw bytes over a socket. Then what
 * the app refuses before routing: a request without Host, OPTIONS, bytes that are not UTF-8.
 */
let h: Harness;
let server: http.Server;
let port: number;

beforeAll(async () => {
  h = await startHarness({ limitsEnabled: false });
  server = createHostServer(createApp(h.deps, 'api'), h.deps.logger);
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
function exchange(raw: string, options: { port?: number; keepOpen?: boolean; latin1?: boolean } = {}): Promise<{ status: number; headers: Record<string, string>; body: any }> {
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
    const bytes = Buffer.from(raw, options.latin1 ? 'latin1' : 'utf8');
    if (options.keepOpen) socket.write(bytes);
    else socket.end(bytes);
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

describe('Hostile input: a request refused before routing (refuseMalformedRequests)', () => {
  test('an HTTP/1.1 request without a Host header → 400 invalid_request in the error shape, with an X-Request-Id (not Node\'s bare 400)', async () => {
    const res = await exchange('GET /accounts/acct_x/channels HTTP/1.1\r\nConnection: close\r\n\r\n');
    expect(res.status).toBe(400);
    expect(res.headers['x-request-id']).toMatch(/^req_/);
    expect(res.body).toEqual({ error: { code: 'invalid_request', message: 'An HTTP/1.1 request must carry a Host header.', field: 'headers.host', reason: 'malformed_request' } });
    // HTTP/1.0 needs none: it reaches the app (no credential here: 401)
    const old = await exchange('GET /accounts/acct_x/channels HTTP/1.0\r\n\r\n');
    expect(old.status).toBe(401);
  });

  test('OPTIONS on a route → 404 not_found like any method the path lacks, before authentication (no CORS, nothing charged)', async () => {
    const res = await exchange('OPTIONS /accounts/acct_x/webhooks HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n');
    expect(res.status).toBe(404);
    expect(res.headers['x-request-id']).toMatch(/^req_/);
    expect(res.headers['allow']).toBeUndefined();
    expect(res.headers['x-call-units-cost']).toBeUndefined();
    expect(res.body).toEqual({ error: { code: 'not_found', message: 'No such endpoint.' } });
  });

  test('a query whose percent-encoding is not UTF-8 (an encoded lone surrogate, a stray byte) → 400 invalid_request, field query; a lone % stays a literal', async () => {
    for (const query of ['event_id=%ED%A0%80', 'q=a%FFb']) {
      const res = await exchange(`GET /accounts/acct_x/search?${query} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n`);
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ error: { code: 'invalid_request', message: 'The query string holds a percent-encoding that is not UTF-8.', field: 'query' } });
    }
    const literal = await exchange('GET /accounts/acct_x/search?q=100%25%20off%zz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n');
    expect(literal.status).toBe(401);
  });

  test('a JSON body that is not UTF-8 → 400 invalid_request, field body (not stored as U+FFFD)', async () => {
    const body = Buffer.concat([Buffer.from('{"text":"a'), Buffer.from([0xff, 0xfe]), Buffer.from('b"}')]);
    const res = await exchange(
      `POST /accounts/acct_x/channels/ch_x/messages HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body.toString('latin1')}`,
      { latin1: true },
    );
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: { code: 'invalid_request', message: 'The request body is not valid UTF-8.', field: 'body' } });
  });
});
