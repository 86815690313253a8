import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { authenticateCredential, getMemberByEmail, revokeCredential, setAccountState, setMemberRole } from '@teamchat/core';
import { addPerson, bearer, newAccount, newAgent, newKey } from '../../../test/support/harness';
import { byType, eventsOf } from '../../../test/support/messaging';
import { createMcpApp } from '../src/app';
import { TOOLS } from '../src/tools';
import { call, startMcpHarness, type McpHarness } from './support';

let h: McpHarness;
beforeAll(async () => { h = await startMcpHarness(); });
afterAll(async () => { await h.close(); });

const CHANNEL_TOOLS = ['list_channels', 'read_history', 'read_thread', 'post_message', 'reply_in_thread', 'edit_message', 'add_reaction', 'remove_reaction', 'delete_message', 'list_dms', 'open_dm'];
const WRITE_TOOLS = ['post_message', 'reply_in_thread', 'edit_message', 'add_reaction', 'remove_reaction', 'delete_message', 'open_dm'];

async function ownerSetup(scopes: string[] = []) {
  const acct = await newAccount(h);
  const key = await newKey(h, acct.accountId, acct.owner.email, scopes);
  const ch = await request(h.api).post(`/accounts/${acct.accountId}/channels`).set(bearer(key)).send({ name: `c-${randomUUID().slice(0, 8)}` });
  expect(ch.status).toBe(201);
  return { acct, key, channelId: ch.body.id as string };
}

const jsonOf = async (res: Response): Promise<any> => res.json();

/** A raw initialize request, for what happens before any MCP client could connect. */
const initialize = (headers: Record<string, string> = {}) =>
  fetch(h.mcpUrl, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...headers },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '0' } } }),
  });

describe('authentication (agent token or API key; web session refused as on the API host; missing or revoked → 401)', () => {
  test('no credential, or an unknown one, is refused with 401 unauthorized before any MCP message is handled', async () => {
    const none = await initialize();
    expect(none.status).toBe(401);
    expect(none.headers.get('mcp-session-id')).toBeNull();
    expect((await jsonOf(none)).error.code).toBe('unauthorized');

    await expect(h.connect('tc_key_' + 'x'.repeat(40))).rejects.toMatchObject({ code: 401 });
  });

  test('a web session (session token or cookie) is refused with wrong_host naming the web host', async () => {
    const asToken = await initialize({ Authorization: `Bearer tc_ses_${'a'.repeat(40)}` });
    expect(asToken.status).toBe(401);
    expect((await jsonOf(asToken)).error).toMatchObject({ code: 'unauthorized', reason: 'wrong_host', host: 'http://web.test' });
    const asCookie = await initialize({ Cookie: `tc_session=tc_ses_${'a'.repeat(40)}` });
    expect((await jsonOf(asCookie)).error).toMatchObject({ reason: 'wrong_host' });
  });

  test('an agent token opens a session; once revoked, the open session is refused at its next request', async () => {
    const acct = await newAccount(h);
    const agent = await newAgent(h, acct.accountId, acct.owner.email, []);
    const client = await h.connect(agent.token);
    expect((await call(client, 'list_channels')).isError).toBeFalsy();

    await h.deps.database.db.transaction((tx) => revokeCredential(tx, { accountId: acct.accountId, credentialId: agent.credentialId }));
    const err = await call(client, 'list_channels').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StreamableHTTPError);
    expect((err as StreamableHTTPError).code).toBe(401);
    expect(String((err as Error).message)).toContain('unauthorized');
  });

  test('a revoked or expired API key, or a malformed Authorization header, is refused with 401 and opens no session', async () => {
    const acct = await newAccount(h);
    const before = h.mcp.sessions.size;
    const revoked = await newKey(h, acct.accountId, acct.owner.email, []);
    const principal = await authenticateCredential(h.deps.database.db, revoked, new Date());
    await h.deps.database.db.transaction((tx) => revokeCredential(tx, { accountId: acct.accountId, credentialId: principal!.id }));
    const expiring = await newKey(h, acct.accountId, acct.owner.email, [], { expiresAt: new Date(Date.now() + 60_000) });
    expect((await initialize(bearer(expiring))).status).toBe(200); // so the refusal below is the expiry's
    const opened = h.mcp.sessions.size;
    h.clock.advance(2 * 60_000);
    try {
      for (const headers of [bearer(revoked), bearer(expiring), { Authorization: `Basic ${Buffer.from('a:b').toString('base64')}` }]) {
        const res = await initialize(headers);
        expect([res.status, res.headers.get('mcp-session-id'), res.headers.get('www-authenticate')]).toEqual([401, null, 'Bearer realm="teamchat"']);
        expect((await jsonOf(res)).error.code).toBe('unauthorized');
      }
      await expect(h.connect(revoked)).rejects.toMatchObject({ code: 401 });
    } finally {
      h.clock.reset();
    }
    expect([before + 1, opened]).toEqual([opened, h.mcp.sessions.size]);
  });

  test('a session answers only the credential that opened it', async () => {
    const { acct, key } = await ownerSetup();
    const other = await newKey(h, acct.accountId, acct.owner.email, []);
    const opened = await initialize(bearer(key));
    const sessionId = opened.headers.get('mcp-session-id')!;
    expect(sessionId).toBeTruthy();
    const res = await fetch(h.mcpUrl, {
      method: 'POST',
      headers: { ...bearer(other), 'Mcp-Session-Id': sessionId, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }),
    });
    expect(res.status).toBe(403);
    expect((await jsonOf(res)).error).toMatchObject({ code: 'forbidden', reason: 'session_credential' });
  });
});

describe('sessions (stateful sessions per the transport; stateless requests refused clearly)', () => {
  test('a request without Mcp-Session-Id other than initialize is refused with 400 saying to initialize first', async () => {
    const { key } = await ownerSetup();
    const res = await fetch(h.mcpUrl, {
      method: 'POST',
      headers: { ...bearer(key), 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(res.status).toBe(400);
    expect((await jsonOf(res)).error.message).toMatch(/Stateless requests are refused/);
    const get = await fetch(h.mcpUrl, { headers: { ...bearer(key), Accept: 'text/event-stream' } });
    expect(get.status).toBe(400);
  });

  test('an unknown session id answers 404 telling the client to initialize again', async () => {
    const { key } = await ownerSetup();
    const res = await fetch(h.mcpUrl, {
      method: 'POST',
      headers: { ...bearer(key), 'Mcp-Session-Id': randomUUID(), 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(res.status).toBe(404);
    expect((await jsonOf(res)).error.message).toMatch(/Session not found.*Initialize a new session/);
  });

  test('a session unused for MCP_SESSION_IDLE_MINUTES (60) is closed; its next request answers 404', async () => {
    const { key } = await ownerSetup();
    // A raw initialize: the SDK client would also open a GET stream, itself a use of the session.
    const idleId = (await initialize(bearer(key))).headers.get('mcp-session-id')!;
    const listTools = (sessionId: string) => fetch(h.mcpUrl, {
      method: 'POST',
      headers: { ...bearer(key), 'Mcp-Session-Id': sessionId, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }),
    });
    try {
      h.clock.advance(59 * 60_000);
      const freshId = (await initialize(bearer(key))).headers.get('mcp-session-id')!;
      h.clock.advance(2 * 60_000);
      expect(await h.mcp.sessions.sweep()).toBeGreaterThanOrEqual(1);
      expect((await listTools(freshId)).status).toBe(200);
      const res = await listTools(idleId);
      expect(res.status).toBe(404);
      expect((await jsonOf(res)).error.message).toMatch(/Session not found/);
    } finally {
      h.clock.reset();
    }
  });

  test('DELETE /mcp ends the session', async () => {
    const { key } = await ownerSetup();
    const before = h.mcp.sessions.size;
    const client = await h.connect(key);
    expect(h.mcp.sessions.size).toBe(before + 1);
    await (client.transport as StreamableHTTPClientTransport).terminateSession();
    expect(h.mcp.sessions.size).toBe(before);
  });
});

describe('tools/list follows the credential\'s scopes (toolsets by scope area)', () => {
  test('a key with only the always-granted scopes sees the channel, message and DM tools', async () => {
    const { key } = await ownerSetup();
    const names = (await (await h.connect(key)).listTools()).tools.map((t) => t.name);
    expect(names.sort()).toEqual([...CHANNEL_TOOLS].sort());
  });

  test('a read-only key (no channels:write) sees no write tool', async () => {
    const { acct } = await ownerSetup();
    const key = await newKey(h, acct.accountId, acct.owner.email, [], { readOnly: true });
    const names = (await (await h.connect(key)).listTools()).tools.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(['list_channels', 'read_history']));
    for (const w of WRITE_TOOLS) expect(names).not.toContain(w);
  });

  test('each grantable scope adds its toolset', async () => {
    const { acct } = await ownerSetup();
    const key = await newKey(h, acct.accountId, acct.owner.email, ['members:manage', 'identities:manage', 'webhooks:manage', 'account:manage', 'audit:read']);
    const names = (await (await h.connect(key)).listTools()).tools.map((t) => t.name);
    expect(names.sort()).toEqual(TOOLS.map((t) => t.name).sort());
  });

  test('webhooks:manage is dropped when the key\'s person is made a member, and its tools disappear from the list', async () => {
    const acct = await newAccount(h);
    const admin = await addPerson(h, acct.accountId, 'admin');
    const key = await newKey(h, acct.accountId, admin.email, ['webhooks:manage']);
    const client = await h.connect(key);
    expect((await client.listTools()).tools.map((t) => t.name)).toContain('list_webhooks');
    const m = await getMemberByEmail(h.deps.database.db, acct.accountId, admin.email);
    await h.deps.database.db.transaction((tx) => setMemberRole(tx, { accountId: acct.accountId, userId: m!.userId, role: 'member' }));
    expect((await client.listTools()).tools.map((t) => t.name)).not.toContain('list_webhooks');
  });

  test('calling a tool outside the scopes answers a tool error naming insufficient_scope (the REST answer)', async () => {
    const { key } = await ownerSetup();
    const r = await call(await h.connect(key), 'get_account');
    expect(r.isError).toBe(true);
    expect(r.structuredContent.error).toMatchObject({ code: 'insufficient_scope', required_scope: 'account:manage' });
    expect((r.content as Array<{ text: string }>)[0].text).toMatch(/^insufficient_scope/);
  });

  test('annotations: readOnlyHint on reads, destructiveHint on delete and on update_webhook (it can drop deliveries), idempotentHint where it holds; every input field has a description', async () => {
    const { acct } = await ownerSetup();
    const key = await newKey(h, acct.accountId, acct.owner.email, ['members:manage', 'identities:manage', 'webhooks:manage', 'account:manage', 'audit:read']);
    const tools = (await (await h.connect(key)).listTools()).tools;
    const by = new Map(tools.map((t) => [t.name, t]));
    expect(by.get('read_history')!.annotations).toMatchObject({ readOnlyHint: true, destructiveHint: false });
    expect(by.get('delete_message')!.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: true });
    expect(by.get('post_message')!.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: false, idempotentHint: false });
    expect(by.get('add_reaction')!.annotations).toMatchObject({ idempotentHint: true, destructiveHint: false });
    expect(tools.filter((t) => t.annotations?.destructiveHint).map((t) => t.name)).toEqual(['delete_message', 'update_webhook']);
    for (const t of tools) {
      expect(t.inputSchema.type).toBe('object');
      for (const [field, schema] of Object.entries(t.inputSchema.properties ?? {})) {
        expect([t.name, field, typeof (schema as { description?: string }).description]).toEqual([t.name, field, 'string']);
      }
    }
  });
});

describe('messages through MCP (`session` on messages)', () => {
  test('a post records session {client, version} from initialize; GET shows it; every event row of the post carries it', async () => {
    const { acct, key, channelId } = await ownerSetup();
    const client = await h.connect(key, { name: 'claude-desktop', version: '0.9.1' });
    const posted = await call(client, 'post_message', { channel_id: channelId, text: `hi <@${acct.owner.identityId}> <!channel>` });
    expect(posted.isError).toBeFalsy();
    const session = { client: 'claude-desktop', version: '0.9.1' };
    expect(posted.structuredContent.session).toEqual(session);

    const reply = await call(client, 'reply_in_thread', { channel_id: channelId, thread_ts: posted.structuredContent.ts, text: 'a reply' });
    expect(reply.structuredContent.session).toEqual(session);

    const history = await request(h.api).get(`/accounts/${acct.accountId}/channels/${channelId}/messages`).set(bearer(key));
    expect(history.body.data[0]).toMatchObject({ ts: posted.structuredContent.ts, session });

    const rows = (await eventsOf(h, acct.accountId)).filter((e) => ['message.posted', 'thread.replied', 'mention'].includes(e.type));
    expect(byType(rows, 'message.posted')).toHaveLength(2);
    expect(byType(rows, 'thread.replied')).toHaveLength(1);
    for (const row of rows) expect((row.data as { session: unknown }).session).toEqual(session);
  });

  test('a post through plain REST keeps session null', async () => {
    const { acct, key, channelId } = await ownerSetup();
    const res = await request(h.api).post(`/accounts/${acct.accountId}/channels/${channelId}/messages`).set(bearer(key)).send({ text: 'plain' });
    expect(res.status).toBe(201);
    expect(res.body.session).toBeNull();
  });

  test('idempotency is the REST surface\'s: the same idempotency_key returns the first message', async () => {
    const { key, channelId } = await ownerSetup();
    const client = await h.connect(key);
    const k = randomUUID();
    const a = await call(client, 'post_message', { channel_id: channelId, text: 'once', idempotency_key: k });
    const b = await call(client, 'post_message', { channel_id: channelId, text: 'once', idempotency_key: k });
    expect(b.structuredContent.ts).toBe(a.structuredContent.ts);
    expect((b.content as Array<{ text: string }>)[0].text).toMatch(/idempotent replay/);
    const c = await call(client, 'post_message', { channel_id: channelId, text: 'other', idempotency_key: k });
    expect(c.isError).toBe(true);
    expect(c.structuredContent.error.code).toBe('idempotency_conflict');
  });

  test('edit, react, unreact and read a thread go through their endpoints', async () => {
    const { key, channelId } = await ownerSetup();
    const client = await h.connect(key);
    const posted = await call(client, 'post_message', { channel_id: channelId, text: 'v1' });
    const ts = posted.structuredContent.ts as string;
    const edited = await call(client, 'edit_message', { channel_id: channelId, ts, text: 'v2', version: 1 });
    expect(edited.structuredContent).toMatchObject({ text: 'v2', version: 2 });
    const stale = await call(client, 'edit_message', { channel_id: channelId, ts, text: 'v3', version: 1 });
    expect(stale.structuredContent.error.code).toBe('edit_conflict');
    expect((await call(client, 'add_reaction', { channel_id: channelId, ts, emoji: 'thumbsup' })).structuredContent).toMatchObject({ emoji: 'thumbsup' });
    expect((await call(client, 'remove_reaction', { channel_id: channelId, ts, emoji: 'thumbsup' })).isError).toBeFalsy();
    const thread = await call(client, 'read_thread', { channel_id: channelId, thread_ts: ts });
    expect(thread.structuredContent.data[0].ts).toBe(ts);
  });

  test('arguments that fail the input schema answer invalid_request naming the field, without a REST call', async () => {
    const { key, channelId } = await ownerSetup();
    const r = await call(await h.connect(key), 'add_reaction', { channel_id: channelId, ts: 'nope', emoji: 'x' });
    expect(r.isError).toBe(true);
    expect(r.structuredContent.error).toMatchObject({ code: 'invalid_request', field: 'ts' });
  });

  test('delete answers confirmation_required with the approval_url; nothing is deleted', async () => {
    const { acct, key, channelId } = await ownerSetup();
    const client = await h.connect(key);
    const posted = await call(client, 'post_message', { channel_id: channelId, text: 'keep me' });
    const r = await call(client, 'delete_message', { channel_id: channelId, ts: posted.structuredContent.ts });
    expect(r.isError).toBeFalsy();
    expect(r.structuredContent.error).toMatchObject({ code: 'confirmation_required' });
    expect(r.structuredContent.error.approval_url).toMatch(/^http:\/\/web\.test\/.*approvals\//);
    expect((r.content as Array<{ text: string }>)[0].text).toContain(r.structuredContent.error.approval_url);
    const history = await request(h.api).get(`/accounts/${acct.accountId}/channels/${channelId}/messages`).set(bearer(key));
    expect(history.body.data.map((m: { ts: string }) => m.ts)).toContain(posted.structuredContent.ts);
  });
});

describe('account states answer as on REST (spec: Account states)', () => {
  test.each(['read_only', 'suspended'] as const)('a %s account answers every tool with that error', async (state) => {
    const { acct, key, channelId } = await ownerSetup();
    const client = await h.connect(key);
    await h.deps.database.db.transaction((tx) => setAccountState(tx, acct.accountId, state));
    for (const [name, args] of [['list_channels', {}], ['post_message', { channel_id: channelId, text: 'x' }]] as const) {
      const r = await call(client, name, args);
      expect(r.isError).toBe(true);
      expect(r.structuredContent).toMatchObject({ http_status: 403, error: { code: state } });
    }
  });
});

describe('errors are tool errors, never protocol crashes (docs/mcp.md, "Results and errors")', () => {
  test('with the API host unreachable a tool answers internal (with request_id and status_url), and the session stays usable', async () => {
    const { key } = await ownerSetup();
    const closed = http.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const deadApi = `http://127.0.0.1:${(closed.address() as AddressInfo).port}`;
    await new Promise((r) => closed.close(r));
    const mcp = createMcpApp(h.deps, { apiUrl: deadApi });
    const server = http.createServer(mcp.handle);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const client = new Client({ name: 'dead-api', version: '0' });
    try {
      await client.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`), {
        requestInit: { headers: bearer(key) },
      }));
      const r = (await client.callTool({ name: 'list_channels', arguments: {} })) as Awaited<ReturnType<typeof call>>;
      expect(r.isError).toBe(true);
      expect(r.structuredContent).toMatchObject({
        http_status: 500,
        error: { code: 'internal', request_id: expect.stringMatching(/^mcp_/), status_url: 'http://web.test/status' },
      });
      expect((await client.listTools()).tools.length).toBeGreaterThan(0);
    } finally {
      await client.close();
      await mcp.close();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });
});
