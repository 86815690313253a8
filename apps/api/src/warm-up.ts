import type http from 'node:http';
import type { AddressInfo } from 'node:net';
import { RedisScript, callSelf, newSecret, type Deps, type WarmUpStep } from '@teamchat/core';
import { prepareStatementsOnEveryPool } from '@teamchat/db';
import { warmUpPostsOnEveryConnection } from './warm-up-posts';

/** Rounds of internal requests per host at warm-up: enough to run every lazy first-time path of the request pipeline. */
const WARM_ROUNDS = 20;

/**
 * The API process's warm-up (docs/operations.md "Readiness"), run after both hosts listen and
 * before /readyz answers 200: every pool connection opened with every named statement prepared
 * on it (the by-key pool's with the by-key statements), the Redis scripts loaded, and internal
 * requests through both hosts' real servers (the probes, and an authenticated route with an
 * unknown credential, which runs the body parser, the credential statement and the error handler), then WARM_UP_POSTS authenticated posts through
 * the API host's app, spread over every pool connection in transactions rolled back
 * (warm-up-posts.ts). Nothing is written.
 */
export function apiWarmUp(deps: Deps, servers: { api: http.Server; web: http.Server }): WarmUpStep[] {
  const port = (s: http.Server) => (s.address() as AddressInfo).port;
  const body = JSON.stringify({ text: 'warm-up' });
  return [
    // The by-key statements (the page read) run on a pool of their own: its connections too.
    { name: 'postgres', run: () => prepareStatementsOnEveryPool(deps.database) },
    { name: 'redis_scripts', run: () => RedisScript.loadAll(deps.redis) },
    {
      name: 'requests',
      run: async () => {
        for (let i = 0; i < WARM_ROUNDS; i += 1) {
          await Promise.all([
            callSelf(port(servers.api), 'GET', '/healthz', {}),
            callSelf(port(servers.web), 'GET', '/healthz', {}),
            callSelf(port(servers.api), 'POST', '/accounts/acct_warmup/channels/chn_warmup/messages',
              { authorization: `Bearer ${newSecret('api_key')}`, 'content-type': 'application/json' }, body),
            callSelf(port(servers.api), 'GET', '/accounts/acct_warmup/channels/chn_warmup/messages?limit=50', { authorization: `Bearer ${newSecret('api_key')}` }),
            callSelf(port(servers.web), 'GET', '/accounts/acct_warmup', { authorization: `Bearer ${newSecret('web_session')}` }),
          ]);
        }
      },
    },
    { name: 'posts', run: async () => { await warmUpPostsOnEveryConnection(deps); } },
  ];
}
