import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ID_PREFIXES } from '@teamchat/core';
import { bearer, newAccount, newKey } from '../../../test/support/harness';
import { createMcpApp, type McpApp } from '../src/app';
import { TOOLS } from '../src/tools';
import { callRest } from '../src/tools/rest-client';
import { call, startMcpHarness, type McpHarness } from './support';

/**
 * Tool arguments cannot steer the MCP server to another REST path: every id argument's schema is
 * its id's exact form (`ch_…`, `job_…`, `whe_…`, `dlv_…`, `idn_…`; a message `ts`; an emoji name),
 * and the typed client refuses a path parameter of `.`, `..` or nothing whatever the tool. The MCP
 * server here calls a recording HTTP server instead of the API host, so a request that escaped
 * would be seen.
 */
let h: McpHarness;
let recorder: http.Server;
let seen: string[] = [];
let mcp: McpApp;
let mcpServer: http.Server;
let client: Client;
let accountId: string;

const listen = async (handler: http.RequestListener) => {
  const server = http.createServer(handler);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return server;
};
const urlOf = (s: http.Server) => `http://127.0.0.1:${(s.address() as AddressInfo).port}`;

beforeAll(async () => {
  h = await startMcpHarness();
  recorder = await listen((req, res) => {
    seen.push(`${req.method} ${req.url}`);
    res.setHeader('Content-Type', 'application/json');
    res.end('{}');
  });
  mcp = createMcpApp(h.deps, { apiUrl: urlOf(recorder) });
  mcpServer = await listen(mcp.handle);
  const acct = await newAccount(h);
  accountId = acct.accountId;
  const key = await newKey(h, acct.accountId, acct.owner.email, ['members:manage', 'identities:manage', 'webhooks:manage', 'account:manage', 'audit:read']);
  client = new Client({ name: 'path-arguments', version: '1' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${urlOf(mcpServer)}/mcp`), { requestInit: { headers: bearer(key) } }));
});
afterAll(async () => {
  await client.close();
  await mcp.close();
  for (const s of [mcpServer, recorder]) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
  await h.close();
});
beforeEach(() => { seen = []; });

const well = (kind: keyof typeof ID_PREFIXES) => `${ID_PREFIXES[kind]}_${'a'.repeat(20)}`;
const VALID: Record<string, unknown> = {
  channel_id: well('channel'), job_id: well('job'), endpoint_id: well('webhook'), delivery_id: well('delivery'),
  ts: '1718000000.000100', thread_ts: '1718000000.000100', emoji: 'thumbsup', members: [well('identity')],
  text: 'x', name: 'agent', url: 'https://example.com/hook', events: ['mention'], channels: 'all',
};
/** Every argument that becomes a path segment or names an object by id. */
const ID_ARGS = ['channel_id', 'job_id', 'endpoint_id', 'delivery_id', 'ts', 'thread_ts', 'emoji'];
const HOSTILE = ['..', '.', '', '%2e%2e', '../..', '..%2f', 'job_../../', `${ID_PREFIXES.job}_aaaaaaaaaaaaaaaaaaaa/..`, 'ch_aaaaaaaaaaaaaaaaaaaa?x=1'];

describe('MCP id arguments match their id forms; nothing reaches another REST path', () => {
  test('get_job {"job_id": ".."} is a tool error (invalid_request, field job_id) and no REST call is made', async () => {
    const r = await call(client, 'get_job', { job_id: '..' });
    expect(r.isError).toBe(true);
    expect(r.structuredContent).toMatchObject({ http_status: 400, error: { code: 'invalid_request', field: 'job_id' } });
    expect(seen).toEqual([]);
    // The recorder does answer a well-formed id: a call that passes goes to /jobs/{id} and only there.
    expect((await call(client, 'get_job', { job_id: well('job') })).isError).toBeFalsy();
    expect(seen).toEqual([`GET /accounts/${accountId}/jobs/${well('job')}`]);
  });

  const cases = TOOLS.flatMap((tool) => ID_ARGS.filter((arg) => arg in tool.input.shape).flatMap((arg) => HOSTILE.map((bad) => [tool.name, arg, bad] as const)));
  test.each(cases)('%s with %s = %j → invalid_request naming the field, no REST call', async (name, arg, bad) => {
    const tool = TOOLS.find((t) => t.name === name)!;
    const args = Object.fromEntries(Object.keys(tool.input.shape).filter((k) => k in VALID).map((k) => [k, VALID[k]]));
    args[arg] = bad;
    const r = await call(client, name, args);
    expect(r.isError).toBe(true);
    expect(r.structuredContent.error).toMatchObject({ code: 'invalid_request', field: arg });
    expect(seen).toEqual([]);
  });

  test('id lists (open_dm members, register_webhook channels) take only ids of their kind', async () => {
    for (const [name, args, field] of [
      ['open_dm', { members: ['..'] }, 'members.0'],
      ['register_webhook', { url: 'https://example.com/h', events: ['mention'], channels: ['../..'] }, 'channels'],
    ] as const) {
      const r = await call(client, name, args);
      expect(r.isError).toBe(true);
      expect(r.structuredContent.error.code).toBe('invalid_request');
      expect(r.structuredContent.error.field).toContain(field);
    }
    expect(seen).toEqual([]);
  });
});

describe('the typed client refuses ".", ".." and empty path parameters whatever the tool', () => {
  const ctx = () => ({
    apiUrl: urlOf(recorder), token: 'key_x', credentialId: 'key_x', accountId: well('account'),
    session: { client: 'c', version: '1' }, secretsKey: h.deps.config.secretsKey, now: new Date(), requestId: 'mcp_test',
  });
  // callRest takes the arguments as given: these skip the tool's own argument schema.
  const getJob = TOOLS.find((t) => t.name === 'get_job')!;
  test.each(['..', '.', ''])('job_id %j → invalid_request (invalid_path_segment), nothing sent', async (jobId) => {
    await expect(callRest(ctx(), getJob, { job_id: jobId })).rejects.toMatchObject({ code: 'invalid_request', extras: { reason: 'invalid_path_segment' } });
    expect(seen).toEqual([]);
  });

  test.each([['%2e%2e', '%252e%252e'], ['../..', '..%2F..'], ['a/b', 'a%2Fb']])('job_id %j is sent as one segment (%s), on the tool\'s route', async (jobId, sent) => {
    const res = await callRest(ctx(), getJob, { job_id: jobId });
    expect(res.status).toBe(200);
    expect(seen).toEqual([`GET /accounts/${well('account')}/jobs/${sent}`]);
  });

  test('a plain id is sent as written', async () => {
    const res = await callRest(ctx(), getJob, { job_id: well('job') });
    expect(res.status).toBe(200);
    expect(seen).toEqual([`GET /accounts/${well('account')}/jobs/${well('job')}`]);
  });
});
