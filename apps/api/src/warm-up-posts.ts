import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createApiKey, openAccount, randomToken, type Deps } from '@teamchat/core';
import type { Db } from '@teamchat/db';
import { createApp } from './app';

/**
 * Posts the API makes at warm-up, before it is ready: the authenticated post's whole way (the
 * credential found, the body validated, the post's statement, the 201 and its log line) run often
 * enough for V8 to compile it before the first client's post pays for it. Measured: without
 * them the first ~200 ms of posts on a fresh API answered in 19-37 ms on average, against 6-8 ms
 * once warm (docs/performance.md "Warm-ups that run the real paths").
 */
export const WARM_UP_POSTS = 150;

/** Thrown to roll the warm-up's transaction back once its posts are made. */
class WarmUpDone extends Error {}

/**
 * Runs WARM_UP_POSTS posts through the API host's real app, served on loopback by a server of
 * the warm-up's own, with every statement in ONE transaction that is rolled back at the end: the
 * account, its key, its channel and the posts exist only inside it, so nothing is ever committed
 * (the events' pg_notify is sent only on commit) and no other connection sees them; the limits
 * are off for these posts, so Redis is not written either. The posts go one at a time: a
 * transaction is one connection. Answers how many were answered 201.
 */
export async function warmUpPosts(deps: Deps, posts = WARM_UP_POSTS): Promise<number> {
  let created = 0;
  try {
    await deps.database.db.transaction(async (tx) => {
      const email = `warm-up-${randomToken(12)}@warm-up.invalid`;
      const account = await openAccount(tx as unknown as Db, { plan: 'scale', ownerEmail: email, ownerPassword: randomToken(32) });
      const { key } = await createApiKey(tx, {
        accountId: account.account_id, userId: account.owner.user_id, identityId: account.owner.identity_id, role: 'owner', scopes: [], readOnly: false,
      });
      // The same app as the API host's, its every statement on the warm-up's transaction. The
      // limits are off for it: they count in Redis, outside the transaction, and would keep a
      // seat's counters for an account that never existed.
      const app = createApp({ ...deps, config: { ...deps.config, limitsEnabled: false }, database: { ...deps.database, db: tx as unknown as Db } }, 'api');
      const server = http.createServer(app);
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      try {
        const { port } = server.address() as AddressInfo;
        const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
        const channel = await call(port, 'POST', `/accounts/${account.account_id}/channels`, headers, JSON.stringify({ name: 'warm-up' }));
        const channelId = (JSON.parse(channel.body) as { id?: string }).id;
        if (channel.status !== 201 || !channelId) throw new Error(`warm-up channel: ${channel.status}`);
        for (let i = 0; i < posts; i += 1) {
          const res = await call(port, 'POST', `/accounts/${account.account_id}/channels/${channelId}/messages`, headers, JSON.stringify({ text: `warm-up message ${i}: an ordinary line of chat` }));
          if (res.status === 201) created += 1;
        }
      } finally {
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
      }
      throw new WarmUpDone();
    });
  } catch (err) {
    if (!(err instanceof WarmUpDone)) throw err;
  }
  return created;
}

/** One request to the warm-up's server; its answer read whole. */
function call(port: number, method: string, path: string, headers: Record<string, string>, body: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method, path, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    req.end(body);
  });
}
