import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { callSelf, createAccount, createApiKey, inRolledBackTransaction, newPerson, warmUpEmail, NO_RELAY_WAKE_UPS, randomToken, type Deps, type PreparedPerson } from '@teamchat/core';
import { poolSize, type Db } from '@teamchat/db';
import { createApp } from './app';

/**
 * Posts the API makes at warm-up, before it is ready: the authenticated post's whole way (the
 * credential found, the body validated, the post's statement, the 201 and its log line) run often
 * enough for V8 to compile it before the first client's post pays for it. Measured: without
 * them the first ~200 ms of posts on a fresh API answered in 19-37 ms on average, against 6-8 ms
 * once warm (docs/performance.md "Warm-ups that run the real paths").
 */
export const WARM_UP_POSTS = 150;

/**
 * A listener that passes on only requests carrying exactly `bearer` as their Authorization; any
 * other answers 403 and reaches nothing. The warm-up's app runs every statement on the warm-up's
 * transaction with the limits off: no other local client, whatever its credential, may use it.
 */
export function onlyBearer(bearer: string, listener: http.RequestListener): http.RequestListener {
  return (req, res) => {
    if (req.headers.authorization === bearer) listener(req, res);
    else res.writeHead(403).end();
  };
}

/**
 * Runs WARM_UP_POSTS posts through the API host's real app, served on loopback by a server of
 * the warm-up's own, with every statement in ONE transaction that is rolled back at the end
 * (inRolledBackTransaction: a held lock waited for over a second fails the step): the
 * account, its key, its channel and the posts exist only inside it, so nothing is ever committed
 * (the events' pg_notify is sent only on commit) and no other connection sees them; the limits
 * are off for these posts, so Redis is not written either. The posts go one at a time: a
 * transaction is one connection. The post route's one after-commit step, waking the relay
 * (create.ts runs it after the handler's statement, which here commits nothing), is given
 * NO_RELAY_WAKE_UPS; a route with any other after-commit work must not be warmed this way.
 * Answers how many posts were answered 201; any other answer fails the step.
 */
export async function warmUpPosts(deps: Deps, posts = WARM_UP_POSTS, owner?: PreparedPerson): Promise<number> {
  // The password is hashed before the transaction opens (scrypt must not hold a connection idle).
  const person = owner ?? await newPerson(warmUpEmail(), randomToken(32));
  return inRolledBackTransaction(deps.database.db, async (tx) => {
    const account = await createAccount(tx, { plan: 'scale', owner: person });
    const { key } = await createApiKey(tx, {
      accountId: account.account_id, userId: account.owner.user_id, identityId: account.owner.identity_id, role: 'owner', scopes: [], readOnly: false,
    });
    // The same app as the API host's, its every statement on the warm-up's transaction. The
    // limits are off for it: they count in Redis, outside the transaction, and would keep a
    // seat's counters for an account that never existed. Only the warm-up's own key is let in.
    const app = createApp({
      ...deps, config: { ...deps.config, limitsEnabled: false }, database: { ...deps.database, db: tx as unknown as Db }, relayWakeUps: NO_RELAY_WAKE_UPS,
    }, 'api');
    const bearer = `Bearer ${key}`;
    const server = http.createServer(onlyBearer(bearer, app));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', resolve);
    });
    try {
      const { port } = server.address() as AddressInfo;
      const headers = { authorization: bearer, 'content-type': 'application/json' };
      const channel = await callSelf(port, 'POST', `/accounts/${account.account_id}/channels`, headers, JSON.stringify({ name: 'warm-up' }));
      const channelId = (JSON.parse(channel.body) as { id?: string }).id;
      if (channel.status !== 201 || !channelId) throw new Error(`the warm-up's channel was answered ${channel.status}`);
      for (let i = 0; i < posts; i += 1) {
        const res = await callSelf(port, 'POST', `/accounts/${account.account_id}/channels/${channelId}/messages`, headers, JSON.stringify({ text: `warm-up message ${i}: an ordinary line of chat` }));
        if (res.status !== 201) throw new Error(`warm-up post ${i} was answered ${res.status}`);
      }
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
    return posts;
  });
}

/**
 * The API's warm-up posts, spread over every connection of the pool: as many rolled-back
 * transactions as the pool has connections, side by side (each holds its own connection until it
 * ends), with WARM_UP_POSTS / connections posts each. Preparing a statement is not running it
 * under load: a connection that meets its first post pays for its first plans, its relation and
 * catalogue caches, the search trigger's first compilation and the text-search dictionary's first
 * load (measured alone: the first `to_tsvector('english', ...)` of a session 2.6-25 ms, the next
 * 0.4-0.8 ms). With the posts on one connection, the other connections paid for these in the
 * first client's second of posts (docs/performance.md "The API's warm-up on every connection").
 * One password is hashed for all: each transaction's owner has an address of its own, so no
 * transaction waits on another's uncommitted row of the same address.
 * Answers how many posts were answered 201 in all.
 */
export async function warmUpPostsOnEveryConnection(deps: Deps, posts = WARM_UP_POSTS): Promise<number> {
  const connections = poolSize(deps.database.pool);
  const hashed = await newPerson(warmUpEmail(), randomToken(32));
  const each = Math.ceil(posts / connections);
  const created = await Promise.all(Array.from({ length: connections }, () => warmUpPosts(deps, each, { ...hashed, email: warmUpEmail() })));
  return created.reduce((a, b) => a + b, 0);
}
