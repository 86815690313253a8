import https from 'node:https';
import type { AddressInfo } from 'node:net';
import type { VettedUrl } from '@teamchat/core';
import { WebhookTransport, type PostResult } from './transport';
import { WARM_UP_CERTIFICATE, WARM_UP_KEY } from './warm-up-certificate';

/**
 * The warm-up's own HTTPS receiver on loopback (warm-up-certificate.ts), and a transport bound to
 * it (BoundTransport): whatever target an attempt was vetted for, its POST goes to this receiver,
 * so a warm-up can never send anything to an address outside this process.
 */
export interface WarmUpReceiver {
  readonly port: number;
  /** where it listens: its name (resolved by nobody) dialled on loopback, its certificate trusted for this target only */
  readonly target: VettedUrl;
  /** the requests it has answered */
  answered(): number;
  close(): Promise<void>;
}

/** Starts the receiver; `statusOf(n)` is the status of its n-th answer (from 1). */
export async function startWarmUpReceiver(statusOf: (n: number) => number): Promise<WarmUpReceiver> {
  let answered = 0;
  const server = https.createServer({ key: WARM_UP_KEY, cert: WARM_UP_CERTIFICATE }, (req, res) => {
    req.resume();
    req.on('end', () => {
      answered += 1;
      res.writeHead(statusOf(answered), { 'content-type': 'text/plain' }).end('ok');
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const { port } = server.address() as AddressInfo;
  const target: VettedUrl = { url: new URL(`https://warm-up.invalid:${port}/warm-up`), address: '127.0.0.1', family: 4, ca: WARM_UP_CERTIFICATE };
  return {
    port,
    target,
    answered: () => answered,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A transport bound to one target: every POST goes there, whatever target it is given. */
export class BoundTransport extends WebhookTransport {
  constructor(config: ConstructorParameters<typeof WebhookTransport>[0], private readonly target: VettedUrl) {
    super(config);
  }

  override post(_target: VettedUrl, headers: Record<string, string>, body: string, options?: { readAnswer?: boolean }): Promise<PostResult> {
    return super.post(this.target, headers, body, options);
  }
}
