import { randomUUID } from 'node:crypto';
import request from 'supertest';
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { PLAN_LIMITS } from '@teamchat/core';
import { bearer, newAccount, newKey, UNLIMITED_PLANS } from '../../../test/support/harness';
import { byType, eventsOf } from '../../../test/support/messaging';
import { call, startMcpHarness, type McpHarness } from './support';

// Starter: 4 calls a minute; Scale: 3 units a day; Pro unlimited (for the session cap test).
let h: McpHarness;
beforeAll(async () => {
  h = await startMcpHarness({
    planLimits: {
      ...UNLIMITED_PLANS,
      starter: { ...UNLIMITED_PLANS.starter, callsPerMinute: 4 },
      scale: { ...UNLIMITED_PLANS.scale, unitsPerDay: 3 },
    },
  });
});
afterAll(async () => { await h.close(); });

describe('limits answer as on REST (a tool call spends what the REST call spends)', () => {
  test('over the per-minute limit a tool answers rate_limited with its scope and retry_after', async () => {
    const acct = await newAccount(h, 'starter');
    const key = await newKey(h, acct.accountId, acct.owner.email, []);
    const client = await h.connect(key);
    for (let i = 0; i < 4; i++) expect((await call(client, 'list_channels')).isError).toBeFalsy();
    const r = await call(client, 'list_channels');
    expect(r.isError).toBe(true);
    expect(r.structuredContent.http_status).toBe(429);
    expect(r.structuredContent.error).toMatchObject({ code: 'rate_limited', scope: 'seat_per_minute' });
    expect(r.structuredContent.error.retry_after).toBeGreaterThan(0);
    expect((r.content as Array<{ text: string }>)[0].text).toMatch(/Retry after \d+ s/);
    // The seat is shared with REST: a plain REST call by the same person is refused too.
    expect((await request(h.api).get(`/accounts/${acct.accountId}/channels`).set(bearer(key))).status).toBe(429);
  });

  test('spent daily units answer budget_exceeded with the budget and retry_after (from Retry-After)', async () => {
    const acct = await newAccount(h, 'scale');
    const key = await newKey(h, acct.accountId, acct.owner.email, []);
    const client = await h.connect(key);
    for (let i = 0; i < 3; i++) expect((await call(client, 'list_channels')).isError).toBeFalsy();
    const r = await call(client, 'list_channels');
    expect(r.structuredContent.error).toMatchObject({ code: 'budget_exceeded', budget: { limit: 3 } });
    expect(r.structuredContent.error.retry_after).toBeGreaterThan(0);
  });
});

describe('per-seat session cap (opening one past the cap evicts the seat\'s least recently used session)', () => {
  test('Pro allows 10 sessions per seat; the 11th evicts the least recently used, whose next request is refused, and writes session.evicted', async () => {
    const cap = PLAN_LIMITS.pro.mcpSessionsPerSeat;
    expect(cap).toBe(10);
    const acct = await newAccount(h, 'pro');
    // Two credentials of one person share one seat.
    const keyA = await newKey(h, acct.accountId, acct.owner.email, []);
    const keyB = await newKey(h, acct.accountId, acct.owner.email, []);
    const clients = [];
    for (let i = 0; i < cap; i++) clients.push(await h.connect(i % 2 ? keyB : keyA, { name: `client-${i}`, version: `v${i}` }));
    // Using session 0 again makes session 1 the least recently used.
    await clients[0].listTools();
    const newest = await h.connect(keyA, { name: 'client-new', version: 'v-new' });

    const err = await clients[1].listTools().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StreamableHTTPError);
    expect((err as StreamableHTTPError).code).toBe(404);
    expect((err as Error).message).toMatch(/Session evicted/);
    // The others keep working.
    for (const c of [clients[0], clients[2], newest]) expect((await c.listTools()).tools.length).toBeGreaterThan(0);

    const evicted = byType(await eventsOf(h, acct.accountId), 'session.evicted');
    expect(evicted).toHaveLength(1);
    expect(evicted[0].channelId).toBeNull();
    expect(evicted[0].data).toMatchObject({ user_id: expect.any(String), session: { client: 'client-1', version: 'v1' }, cap: 10 });
  });

  test('sessions of another seat are not counted', async () => {
    const acct = await newAccount(h, 'pro');
    const other = await newAccount(h, 'pro');
    const key = await newKey(h, acct.accountId, acct.owner.email, []);
    const otherKey = await newKey(h, other.accountId, other.owner.email, []);
    const first = await h.connect(otherKey, { name: 'other', version: randomUUID() });
    for (let i = 0; i < 11; i++) await h.connect(key);
    expect((await first.listTools()).tools.length).toBeGreaterThan(0);
    expect(byType(await eventsOf(h, other.accountId), 'session.evicted')).toHaveLength(0);
    expect(byType(await eventsOf(h, acct.accountId), 'session.evicted')).toHaveLength(1);
  });
});
