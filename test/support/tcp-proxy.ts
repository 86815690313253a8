import net from 'node:net';

/**
 * A TCP proxy on loopback in front of a real server (PostgreSQL here), that a test can freeze:
 * while frozen nothing passes either way and new connections are accepted but not carried on,
 * as a network partition or a stalled server looks to a client (no reset, no answer). Thawed,
 * what waited flows again.
 */
export interface TcpProxy {
  port: number;
  freeze(): void;
  thaw(): void;
  /** the connections open now stop answering for good (their peer gone without a word); new ones are carried */
  strandOpenConnections(): void;
  close(): Promise<void>;
}

export async function tcpProxy(upstream: { host: string; port: number }): Promise<TcpProxy> {
  let frozen = false;
  const pairs = new Set<{ client: net.Socket; server: net.Socket | null; stranded?: boolean }>();
  const waiting: Array<() => void> = [];
  const carry = (pair: { client: net.Socket; server: net.Socket | null }) => {
    const server = net.connect(upstream.port, upstream.host);
    pair.server = server;
    pair.client.pipe(server);
    server.pipe(pair.client);
    server.on('error', () => pair.client.destroy());
    server.on('close', () => pair.client.destroy());
  };
  const srv = net.createServer((client) => {
    const pair = { client, server: null as net.Socket | null };
    pairs.add(pair);
    client.on('error', () => pair.server?.destroy());
    client.on('close', () => { pair.server?.destroy(); pairs.delete(pair); });
    if (frozen) {
      client.pause();
      waiting.push(() => { client.resume(); carry(pair); });
    } else {
      carry(pair);
    }
  });
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  return {
    port: (srv.address() as net.AddressInfo).port,
    freeze() {
      frozen = true;
      for (const p of pairs) { p.client.pause(); p.server?.pause(); }
    },
    thaw() {
      frozen = false;
      for (const p of pairs) if (!p.stranded) { p.client.resume(); p.server?.resume(); }
      for (const go of waiting.splice(0)) go();
    },
    strandOpenConnections() {
      for (const p of pairs) {
        p.stranded = true;
        p.client.unpipe();
        p.server?.unpipe();
        p.client.pause();
        p.server?.pause();
      }
    },
    async close() {
      for (const p of pairs) { p.client.destroy(); p.server?.destroy(); }
      await new Promise<void>((resolve) => srv.close(() => resolve()));
    },
  };
}
