import type http from 'node:http';
import type { AddressInfo } from 'node:net';
import { callSelf, newSecret, type Deps, type WarmUpStep } from '@teamchat/core';
import { prepareStatementsOnEveryPool } from '@teamchat/db';

/** Rounds of internal requests at warm-up: enough to run every lazy first-time path of an MCP request. */
const WARM_ROUNDS = 20;

/** An initialize request as a client sends it first; refused at warm-up before it is read (unknown credential). */
const INITIALIZE = JSON.stringify({
  jsonrpc: '2.0', id: 1, method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'warm-up', version: '0' } },
});

/**
 * The MCP server's warm-up (docs/operations.md "Readiness"), run once its port listens and before
 * its /readyz answers 200. Every MCP request authenticates against PostgreSQL before anything
 * else, so the pool is opened to its size with every named statement prepared on each connection
 * (`prepareStatementsOnEveryPool`, nothing written); then internal requests go through its real
 * server on loopback: the probe, and `initialize` on /mcp with an unknown API key (the request
 * handler, the credential statement and the error answer, logged as `401`s). No session is
 * opened and nothing is written: the tools themselves are calls to the API host, warm on its side.
 */
export function mcpWarmUp(deps: Deps, server: http.Server): WarmUpStep[] {
  // Read while the server listens: once a shutdown closes it, a call finds the port refused.
  const port = (server.address() as AddressInfo).port;
  return [
    { name: 'postgres', run: () => prepareStatementsOnEveryPool(deps.database) },
    {
      name: 'requests',
      run: async () => {
        for (let i = 0; i < WARM_ROUNDS; i += 1) {
          await Promise.all([
            callSelf(port, 'GET', '/healthz', {}),
            callSelf(port, 'POST', '/mcp', {
              authorization: `Bearer ${newSecret('api_key')}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream',
            }, INITIALIZE),
          ]);
        }
      },
    },
  ];
}
