/**
 * The MCP server while Redis is away (docs/limits.md "When Redis is away"): PostgreSQL is the
 * truth, so every /mcp request still answers, never 500, never hangs. The per-seat cap on
 * concurrent sessions, normally in Redis, is kept in the MCP process meanwhile (counted and warned
 * about as `mcp_sessions_local`), and goes back to Redis by itself once Redis answers again.
 *
 * The Redis here is a redis-server this file starts, kills, freezes and restarts on a spare port.
 */
import request from 'supertest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPError, type StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  createLogger, DEFAULT_REDIS_COMMAND_TIMEOUT_MS, degradedDecisionCounts, mcpKeyBase, REDIS_RETRY_PAUSE_MS, waitReady,
} from '@teamchat/core';
import { bearer, newAccount, newKey, UNLIMITED_PLANS } from '../../../test/support/harness';
import { byType, eventsOf } from '../../../test/support/messaging';
import { testRedisServer, type TestRedisServer } from '../../../test/support/redis-server';
import { call, serveMcp, startMcpHarness, type McpHarness, type ServedMcp } from './support';

/** A small cap, so a test opens few sessions (Pro's 10 is checked in limits-and-cap.test.ts). */
const CAP = 2;
const planLimits = { ...UNLIMITED_PLANS, pro: { ...UNLIMITED_PLANS.pro, mcpSessionsPerSeat: CAP } };

/** A real logger (silent) whose warnings are also kept, to check the degraded-decision warning. */
function warningsKept() {
  const logger = createLogger('mcp', 'silent');
  const warnings: Array<Record<string, unknown>> = [];
  const warn = logger.warn.bind(logger);
  logger.warn = ((message: string, meta: Record<string, unknown> = {}) => {
    warnings.push({ message, ...meta });
    return warn(message, meta);
  }) as unknown as typeof logger.warn;
  return { logger, warnings };
}

/** Waits past the pause after a failed call, so the next call uses Redis. */
const pastThePause = () => new Promise((r) => setTimeout(r, REDIS_RETRY_PAUSE_MS + 100));

let server: TestRedisServer;
let h: McpHarness;
/** two MCP apps on one Redis: two MCP processes */
let mcp1: ServedMcp;
let mcp2: ServedMcp;
const kept = warningsKept();

beforeAll(async () => {
  server = await testRedisServer();
  // The service's own command timeout (the harness raises it): a frozen Redis must cost 1 s.
  h = await startMcpHarness({ redisUrl: server.url, redisCommandTimeoutMs: DEFAULT_REDIS_COMMAND_TIMEOUT_MS, planLimits });
  mcp1 = await serveMcp({ ...h.deps, logger: kept.logger }, h.apiUrl);
  mcp2 = await serveMcp(h.deps, h.apiUrl);
});
afterAll(async () => {
  await mcp1?.close();
  await mcp2?.close();
  await h?.close();
  await server?.stop();
});
// Every test starts with Redis answering and in use (past the pause after a failed call).
afterEach(async () => {
  server.thaw();
  await server.start();
  await waitReady(h.deps.redis, 10_000);
  await pastThePause();
});

/** Kills Redis and waits until the connection has noticed. */
async function redisDown(): Promise<void> {
  await server.stop();
  for (let i = 0; i < 100 && h.deps.redis.status === 'ready'; i += 1) await new Promise((r) => setTimeout(r, 20));
  expect(h.deps.redis.status).not.toBe('ready');
}

/** Starts Redis again (empty) and waits until the next call uses it. */
async function redisUp(): Promise<void> {
  await server.start();
  await waitReady(h.deps.redis, 10_000);
  await pastThePause();
}

async function seat() {
  const acct = await newAccount(h, 'pro');
  const key = await newKey(h, acct.accountId, acct.owner.email, []);
  const channel = await request(h.api).post(`/accounts/${acct.accountId}/channels`).set(bearer(key)).send({ name: `c-${Date.now()}` });
  expect(channel.status).toBe(201);
  const seatKey = `${mcpKeyBase(h.deps.config)}:seat:${acct.accountId}:${acct.owner.userId}`;
  return { acct, key, channelId: channel.body.id as string, seatKey };
}

const sessionIdOf = (c: Client) => (c.transport as StreamableHTTPClientTransport).sessionId!;
const mcpSessionsLocal = () => degradedDecisionCounts().mcp_sessions_local;

/** The answer an evicted session gets on its next request (as when the cap is in Redis). */
async function expectEvicted(c: Client): Promise<void> {
  const err = await c.listTools().catch((e: unknown) => e);
  expect(err).toBeInstanceOf(StreamableHTTPError);
  expect((err as StreamableHTTPError).code).toBe(404);
  expect((err as Error).message).toMatch(/Session evicted/);
}

test('while Redis is down, initialize, tools/list and tool calls (list_channels, post_message) answer; each seat-cap decision is counted and warned as mcp_sessions_local', async () => {
  const { key, channelId } = await seat();
  await redisDown();
  const before = mcpSessionsLocal();

  const client = await mcp1.connect(key, { name: 'away', version: '1' });
  expect((await client.listTools()).tools.map((t) => t.name)).toEqual(expect.arrayContaining(['list_channels', 'post_message']));
  const channels = await call(client, 'list_channels');
  expect(channels.isError).toBeFalsy();
  const posted = await call(client, 'post_message', { channel_id: channelId, text: 'while Redis is away' });
  expect(posted.isError).toBeFalsy();
  expect(posted.structuredContent).toMatchObject({ text: 'while Redis is away', session: { client: 'away', version: '1' } });

  // initialize, the initialized notification, tools/list, two tool calls: each one decision at least
  expect(mcpSessionsLocal() - before).toBeGreaterThanOrEqual(5);
  expect(kept.warnings).toContainEqual(expect.objectContaining({
    message: 'limits degraded: Redis unavailable', decision: 'mcp_sessions_local', redis_status: expect.not.stringMatching(/^ready$/),
  }));
});

test('while Redis is down, the cap is kept in the process: one session past it evicts the seat\'s least recently used (opened before the outage or not), refused on its next request, with session.evicted', async () => {
  const { acct, key } = await seat();
  const before = await mcp1.connect(key, { name: 'before-outage', version: '1' });
  await redisDown();
  const lru = await mcp1.connect(key, { name: 'lru', version: '1' });
  // The seat now holds CAP sessions; using the first again leaves `lru` the least recently used.
  expect((await before.listTools()).tools.length).toBeGreaterThan(0);
  const newest = await mcp1.connect(key, { name: 'newest', version: '1' });

  await expectEvicted(lru);
  for (const c of [before, newest]) expect((await c.listTools()).tools.length).toBeGreaterThan(0);
  const evicted = byType(await eventsOf(h, acct.accountId), 'session.evicted');
  expect(evicted).toHaveLength(1);
  expect(evicted[0].data).toMatchObject({ session: { client: 'lru', version: '1' }, cap: CAP });

  // Opening one more evicts the least recently used again, a session opened before the outage too.
  await newest.listTools();
  await mcp1.connect(key, { name: 'one-more', version: '1' });
  await expectEvicted(before);
});

test('while Redis is frozen, initialize and a request on an open session answer within seconds (one command timeout), not 500', async () => {
  const { key } = await seat();
  const open = await mcp1.connect(key);
  server.freeze();

  let started = performance.now();
  const init = await fetch(mcp1.mcpUrl, {
    method: 'POST',
    headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '0' } } }),
    signal: AbortSignal.timeout(10_000),
  });
  expect(init.status).toBe(200);
  expect(init.headers.get('mcp-session-id')).toEqual(expect.any(String));
  expect(performance.now() - started).toBeLessThan(5_000);

  // After the pause that follows a failed call, Redis is tried (and times out) once more.
  await pastThePause();
  started = performance.now();
  const listed = await call(open, 'list_channels');
  expect(listed.isError).toBeFalsy();
  expect(performance.now() - started).toBeLessThan(5_000);
});

test('while Redis refuses writes (OOM), initialize and a tool call answer', async () => {
  const { key } = await seat();
  await h.deps.redis.config('SET', 'maxmemory', '1');
  try {
    await expect(h.deps.redis.set(`${mcpKeyBase(h.deps.config)}:probe`, '1')).rejects.toThrow(/OOM/);
    const before = mcpSessionsLocal();
    const client = await mcp1.connect(key);
    expect((await call(client, 'list_channels')).isError).toBeFalsy();
    expect(mcpSessionsLocal() - before).toBeGreaterThanOrEqual(1);
  } finally {
    await h.deps.redis.config('SET', 'maxmemory', '0');
  }
});

test('once Redis is back after a restart, a session opened meanwhile re-registers on its next request and the cap holds across MCP processes again', async () => {
  const { key, seatKey } = await seat();
  await redisDown();
  const opened = await mcp1.connect(key, { name: 'opened-while-away', version: '1' });
  await redisUp();
  const before = mcpSessionsLocal();

  expect((await opened.listTools()).tools.length).toBeGreaterThan(0);
  expect(await h.deps.redis.zrange(seatKey, 0, -1)).toEqual([sessionIdOf(opened)]);
  // Two more in the other process: the cap in Redis counts the first process's session and evicts it.
  await mcp2.connect(key, { name: 'elsewhere-1', version: '1' });
  await mcp2.connect(key, { name: 'elsewhere-2', version: '1' });
  await expectEvicted(opened);
  expect(await h.deps.redis.zcard(seatKey)).toBe(CAP);
  expect(mcpSessionsLocal() - before).toBe(0);
});

test('a session closed while Redis is frozen leaves its seat in Redis once Redis answers again', async () => {
  const { key, seatKey } = await seat();
  const stays = await mcp1.connect(key, { name: 'stays', version: '1' });
  const leaves = await mcp1.connect(key, { name: 'leaves', version: '1' });
  expect((await h.deps.redis.zrange(seatKey, 0, -1)).sort()).toEqual([sessionIdOf(stays), sessionIdOf(leaves)].sort());
  const leavingId = sessionIdOf(leaves);

  server.freeze();
  await (leaves.transport as StreamableHTTPClientTransport).terminateSession();
  server.thaw();
  await pastThePause();

  expect((await stays.listTools()).tools.length).toBeGreaterThan(0);
  expect(await h.deps.redis.zrange(seatKey, 0, -1)).toEqual([sessionIdOf(stays)]);
  expect(await h.deps.redis.exists(`${mcpKeyBase(h.deps.config)}:session:${leavingId}`)).toBe(0);
});
