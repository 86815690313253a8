/**
 * `drainable` (docs/operations.md "Graceful shutdown"): a request that reaches the server after
 * its close began (on a connection opened before, or behind a request in flight) and that the
 * app answers at once is answered with Connection: close, and nothing throws out of the server's
 * event (an exception there would crash the process mid-drain).
 */
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { drainable } from '../src/ops/shutdown';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('requests read after the close began, answered at once by the app: Connection: close, nothing thrown', async () => {
  const server = http.createServer((req, res) => {
    if (req.url === '/slow') setTimeout(() => res.end('slow'), 50);
    else res.end('at once');
  });
  const drain = drainable(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const thrown: unknown[] = [];
  const onUncaught = (err: unknown) => { thrown.push(err); };
  process.on('uncaughtException', onUncaught);
  const open = async () => {
    const s = net.connect(port, '127.0.0.1');
    s.on('error', () => undefined);
    await new Promise((r) => s.on('connect', r));
    const got = { text: '' };
    s.on('data', (c) => { got.text += c.toString(); });
    return { s, got };
  };
  try {
    const fresh = await open(); // accepted, no request yet: the close does not end it
    const busy = await open();
    busy.s.write('GET /slow HTTP/1.1\r\nHost: x\r\n\r\n');
    await sleep(10);
    const closed = drain.close();
    fresh.s.write('GET /fast HTTP/1.1\r\nHost: x\r\n\r\n');
    busy.s.write('GET /fast HTTP/1.1\r\nHost: x\r\n\r\n');
    await closed;
    await sleep(50);
    expect(thrown).toEqual([]);
    expect(fresh.got.text).toMatch(/^HTTP\/1\.1 200 OK/);
    expect(fresh.got.text.toLowerCase()).toContain('connection: close');
    expect(busy.got.text).toMatch(/^HTTP\/1\.1 200 OK[\s\S]*slow/);
    expect(busy.got.text.toLowerCase()).toContain('connection: close');
    fresh.s.destroy();
    busy.s.destroy();
  } finally {
    process.off('uncaughtException', onUncaught);
  }
});
