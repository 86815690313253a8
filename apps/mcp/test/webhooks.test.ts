import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import request from 'supertest';
import Stripe from 'stripe';
import { EVENT_TYPES, MANUAL_DELIVERY_LIMITS, SUBSCRIBABLE_EVENTS, setAccountState } from '@teamchat/core';
import { bearer, newAccount, newAgent, newKey, signInWeb, type TestAccount } from '../../../test/support/harness';
import { startReceiver, type Receiver } from '../../../test/support/https-receiver';
import { webhookConfig } from '../../../test/support/webhooks';
import { call, startMcpHarness, type McpHarness } from './support';

/**
 * The MCP webhooks toolset (list with health, register, change, send a test, read deliveries,
 * replay) through the SDK's own Client and Streamable HTTP transport, against the real MCP server,
 * API host, PostgreSQL, Redis and a real HTTPS receiver on loopback (throwaway CA). Spec: Webhooks,
 * Webhook endpoint enablement, Delivery transitions (test, replay), Limits, Authentication 7-8.
 */
const stripe = new Stripe('sk_test_unused');
const WEBHOOK_TOOLS = ['list_webhooks', 'register_webhook', 'update_webhook', 'send_webhook_test', 'list_webhook_deliveries', 'replay_webhook_delivery'];

let h: McpHarness;
let rx: Receiver;
beforeAll(async () => {
  h = await startMcpHarness(webhookConfig());
  rx = await startReceiver();
});
afterAll(async () => {
  await rx.close();
  await h.close();
});
beforeEach(() => {
  rx.fallback = { status: 200 };
});

type Result = Awaited<ReturnType<typeof call>>;

/** A success: not a tool error, the REST body as structured content, and the same body as the JSON text block. */
function body(r: Result): any {
  expect([r.isError ?? false, r.structuredContent?.http_status]).toEqual([false, undefined]);
  const blocks = r.content as Array<{ type: string; text: string }>;
  expect(JSON.parse(blocks[1].text)).toEqual(r.structuredContent);
  return r.structuredContent;
}

/** A tool error carrying the REST error body and status. */
function toolError(r: Result): { error: Record<string, any>; http_status: number } {
  expect(r.isError).toBe(true);
  return r.structuredContent;
}

interface Setup {
  acct: TestAccount;
  key: string;
  client: Client;
  /** REST through the same credential, on the API host */
  rest: { get(path: string): request.Test };
  /** the owner signed in on the web host: what only a person on the dashboard may do */
  web: { patch(path: string, body: object): request.Test; post(path: string): request.Test };
  /** a fresh receiver URL for this setup (each on its own path) */
  url(): string;
  /** requests the receiver got on this setup's URLs */
  mine(): typeof rx.received;
}

async function setup(opts: { plan?: 'starter' | 'pro' | 'scale'; scopes?: string[] } = {}): Promise<Setup> {
  const acct = await newAccount(h, opts.plan ?? 'pro');
  const key = await newKey(h, acct.accountId, acct.owner.email, opts.scopes ?? ['webhooks:manage']);
  const client = await h.connect(key, { name: 'webhook-agent', version: '2.0.0' });
  const base = `/accounts/${acct.accountId}`;
  const { agent, csrf } = await signInWeb(h, acct.owner.email);
  const paths = new Set<string>();
  const self: Setup = {
    acct, key, client,
    rest: { get: (p) => request(h.api).get(base + p).set(bearer(key)) },
    web: {
      patch: (p, b) => agent.patch(base + p).set('X-CSRF-Token', csrf).send(b),
      post: (p) => agent.post(base + p).set('X-CSRF-Token', csrf).send({}),
    },
    url: () => {
      const p = `/mcp-${Math.random().toString(36).slice(2, 10)}`;
      paths.add(p);
      return rx.url(p);
    },
    mine: () => rx.received.filter((r) => paths.has(r.path)),
  };
  return self;
}

async function registerThroughMcp(s: Setup, over: Record<string, unknown> = {}) {
  return call(s.client, 'register_webhook', { url: s.url(), events: ['message.posted', 'mention'], channels: 'all', ...over });
}

/** Enables the endpoint the way only a person can: PATCH enabled:true from a web session (it delivers a test event first). */
async function enableOnDashboard(s: Setup, endpointId: string) {
  const res = await s.web.patch(`/webhooks/${endpointId}`, { enabled: true });
  expect([res.status, res.body.enabled, res.body.test_delivery?.status]).toEqual([200, true, 'delivered']);
  return res.body;
}

/** The endpoint as the REST GET answers it, without `health` (which write answers do not carry). */
async function restEndpoint(s: Setup, endpointId: string) {
  const res = await s.rest.get(`/webhooks/${endpointId}`).expect(200);
  const { health: _health, ...rest } = res.body;
  return rest;
}

describe('register_webhook (spec: Webhook endpoint enablement, row 1: register through a credential)', () => {
  test.each(['api key', 'agent token'] as const)('through an %s it lands enabled:false, awaiting_enable, secret_pending_reveal, with no secret; the result is the REST body', async (via) => {
    const s = await setup();
    if (via === 'agent token') {
      const agent = await newAgent(h, s.acct.accountId, s.acct.owner.email, ['webhooks:manage']);
      s.client = await h.connect(agent.token);
    }
    const r = await registerThroughMcp(s);
    const ep = body(r);
    expect(ep).toMatchObject({
      id: expect.stringMatching(/^whe_/), events: ['message.posted', 'mention'], channels: 'all', payload: 'pointers',
      enabled: false, disabled_reason: 'awaiting_enable', secret_pending_reveal: true, created_via: via === 'api key' ? 'api_key' : 'agent_token',
    });
    expect(ep).not.toHaveProperty('secret');
    expect(ep).toEqual(await restEndpoint(s, ep.id));
    expect(s.mine()).toHaveLength(0); // delivers nothing

    // The real secret (revealed once, to a person on the dashboard) appears nowhere in the tool result.
    const revealed = await s.web.post(`/webhooks/${ep.id}/reveal`).expect(200);
    expect(revealed.body.secret).toMatch(/^whsec_/);
    expect(JSON.stringify(r)).not.toContain(revealed.body.secret);
    expect(JSON.stringify(r)).not.toContain(revealed.body.secret.slice('whsec_'.length));
  });

  test('idempotency_key is the REST surface\'s: the same key returns the first endpoint; another body answers idempotency_conflict', async () => {
    const s = await setup();
    const k = '9b2f3c1e-8d4a-4f6b-9c0d-1e2f3a4b5c6d';
    const url = s.url();
    const a = body(await call(s.client, 'register_webhook', { url, events: ['message.posted'], channels: 'all', idempotency_key: k }));
    const again = await call(s.client, 'register_webhook', { url, events: ['message.posted'], channels: 'all', idempotency_key: k });
    expect(body(again).id).toBe(a.id);
    expect((again.content as Array<{ text: string }>)[0].text).toMatch(/idempotent replay/);
    const other = toolError(await call(s.client, 'register_webhook', { url, events: ['mention'], channels: 'all', idempotency_key: k }));
    expect(other.error.code).toBe('idempotency_conflict');
  });

  test('REST refusals come back as tool errors: a non-https URL, an unknown channel, an unknown event (schema)', async () => {
    const s = await setup();
    const plain = toolError(await registerThroughMcp(s, { url: 'http://localhost:9/hook' }));
    expect(plain).toMatchObject({ http_status: 400, error: { code: 'invalid_request', field: 'url', reason: 'not_https' } });
    const channel = toolError(await registerThroughMcp(s, { channels: ['ch_00000000000000000000'] }));
    expect(channel).toMatchObject({ http_status: 400, error: { code: 'invalid_request', field: 'channels', reason: 'unknown_channel' } });
    const event = toolError(await registerThroughMcp(s, { events: ['message.exploded'] }));
    expect(event.error).toMatchObject({ code: 'invalid_request', field: 'events.0' });
  });

  test('the endpoints-per-seat count limit answers budget_exceeded with the budget, as on REST (Starter: 3 per seat)', async () => {
    const s = await setup({ plan: 'starter' });
    for (let i = 0; i < 3; i++) body(await registerThroughMcp(s));
    const over = toolError(await registerThroughMcp(s));
    expect(over).toMatchObject({
      http_status: 429,
      error: { code: 'budget_exceeded', scope: 'webhook_endpoints_per_seat', budget: { limit: 3, used: 3, resets_at: null } },
    });
    expect(over.error.retry_after).toBeUndefined(); // a count limit does not reset with time: no Retry-After
  });
});

describe('list_webhooks (spec: list endpoints with their health)', () => {
  test('each endpoint carries its health fields; the result is the REST page; pages follow next_cursor', async () => {
    const s = await setup();
    const first = body(await registerThroughMcp(s));
    const second = body(await registerThroughMcp(s, { payload: 'text', channels: 'all' }));
    const page = body(await call(s.client, 'list_webhooks'));
    expect(page.data.map((e: { id: string }) => e.id)).toEqual([first.id, second.id]);
    expect(page.next_cursor).toBeNull();
    expect(page.data[0].health).toEqual({
      last_success_at: null, last_failure_at: null, success_rate_24h: null, attempts_24h: 0, median_latency_ms: null, pending_count: 0,
    });
    expect(page).toEqual((await s.rest.get('/webhooks').expect(200)).body);

    const one = body(await call(s.client, 'list_webhooks', { limit: 1 }));
    expect(one.data.map((e: { id: string }) => e.id)).toEqual([first.id]);
    const rest = body(await call(s.client, 'list_webhooks', { limit: 1, cursor: one.next_cursor }));
    expect(rest.data.map((e: { id: string }) => e.id)).toEqual([second.id]);
    expect(toolError(await call(s.client, 'list_webhooks', { cursor: 'not-a-cursor' })).error.code).toBe('invalid_cursor');
  });

  test('health follows the delivery log: after a delivered and a failed test event', async () => {
    const s = await setup();
    const ep = body(await registerThroughMcp(s));
    // Awaiting enable, it takes no test event (its URL is not vetted yet): 403 forbidden awaiting_enable.
    expect(toolError(await call(s.client, 'send_webhook_test', { endpoint_id: ep.id })).error).toMatchObject({ code: 'forbidden', reason: 'awaiting_enable' });
    await enableOnDashboard(s, ep.id); // delivers its own test event first
    rx.script({ status: 503 });
    expect(body(await call(s.client, 'send_webhook_test', { endpoint_id: ep.id })).status).toBe('failed');
    const [listed] = body(await call(s.client, 'list_webhooks')).data;
    expect(listed.health).toMatchObject({
      last_success_at: expect.any(String), last_failure_at: expect.any(String), success_rate_24h: 0.5, attempts_24h: 2,
      median_latency_ms: expect.any(Number), pending_count: 0,
    });
  });
});

describe('update_webhook (spec: Webhook endpoint enablement, rows 3 and the web_session_required rule)', () => {
  test('on an enabled endpoint: events change keeps it enabled; a new url, or payload switched to text, lands awaiting_enable', async () => {
    const s = await setup();
    const ep = body(await registerThroughMcp(s));
    await enableOnDashboard(s, ep.id);

    const events = body(await call(s.client, 'update_webhook', { endpoint_id: ep.id, events: ['message.posted'] }));
    expect(events).toMatchObject({ enabled: true, disabled_reason: null, events: ['message.posted'] });
    expect(events).toEqual(await restEndpoint(s, ep.id));

    const moved = body(await call(s.client, 'update_webhook', { endpoint_id: ep.id, url: s.url() }));
    expect(moved).toMatchObject({ enabled: false, disabled_reason: 'awaiting_enable' });
    expect(moved).toEqual(await restEndpoint(s, ep.id));

    await enableOnDashboard(s, ep.id);
    const text = body(await call(s.client, 'update_webhook', { endpoint_id: ep.id, payload: 'text' }));
    expect(text).toMatchObject({ payload: 'text', enabled: false, disabled_reason: 'awaiting_enable' });
  });

  test('enabled:true through a credential is a tool error 403 forbidden, web_session_required, and changes nothing', async () => {
    const s = await setup();
    const ep = body(await registerThroughMcp(s));
    const r = await call(s.client, 'update_webhook', { endpoint_id: ep.id, enabled: true });
    expect(toolError(r)).toMatchObject({ http_status: 403, error: { code: 'forbidden', reason: 'web_session_required' } });
    expect((r.content as Array<{ text: string }>)[0].text).toMatch(/^forbidden \(web_session_required\): /);
    expect(await restEndpoint(s, ep.id)).toEqual(ep);
  });

  test('enabled:false disables (manual); version sent as If-Match answers stale once it changed; an empty change is invalid_request', async () => {
    const s = await setup();
    const ep = body(await registerThroughMcp(s));
    const enabled = await enableOnDashboard(s, ep.id);
    const off = body(await call(s.client, 'update_webhook', { endpoint_id: ep.id, enabled: false, version: enabled.version }));
    expect(off).toMatchObject({ enabled: false, disabled_reason: 'manual', version: enabled.version + 1 });
    const stale = toolError(await call(s.client, 'update_webhook', { endpoint_id: ep.id, events: ['mention'], version: enabled.version }));
    expect(stale).toMatchObject({ http_status: 412, error: { code: 'stale', current_version: off.version } });
    expect(toolError(await call(s.client, 'update_webhook', { endpoint_id: ep.id })).error.code).toBe('invalid_request');
    expect(toolError(await call(s.client, 'update_webhook', { endpoint_id: 'whe_00000000000000000000', enabled: false })).error.code).toBe('not_found');
  });
});

describe('send_webhook_test, list_webhook_deliveries, replay_webhook_delivery (spec: test and replay deliver and return the result)', () => {
  test('a test event reaches the real HTTPS receiver, signed; the log lists it; a replay sends the same body with the same event id', async () => {
    const s = await setup();
    const ep = body(await registerThroughMcp(s));
    await enableOnDashboard(s, ep.id);
    const secret = (await s.web.post(`/webhooks/${ep.id}/reveal`).expect(200)).body.secret as string;
    const before = s.mine().length; // enabling delivered its own test event first

    const sent = body(await call(s.client, 'send_webhook_test', { endpoint_id: ep.id }));
    expect(sent).toEqual({ delivery_id: expect.stringMatching(/^dlv_/), status: 'delivered', response_status: 200, latency_ms: expect.any(Number), error: null });
    expect((await call(s.client, 'send_webhook_test', { endpoint_id: 'whe_00000000000000000000' })).structuredContent.error.code).toBe('not_found');
    const received = s.mine().slice(before);
    expect(received).toHaveLength(1);
    const [req] = received;
    const event = JSON.parse(req.body);
    expect(event).toMatchObject({ id: expect.stringMatching(/^evt_/), type: 'test', account_id: s.acct.accountId });
    expect(req.headers).toMatchObject({ 'x-service-event': 'test', 'x-service-delivery': sent.delivery_id, 'x-service-attempt': '1' });
    expect(stripe.webhooks.constructEvent(req.body, req.headers['x-service-signature'] as string, secret, 300)).toBeTruthy();

    const log = body(await call(s.client, 'list_webhook_deliveries', { endpoint_id: ep.id }));
    expect(log).toEqual((await s.rest.get(`/webhooks/${ep.id}/deliveries`).expect(200)).body);
    expect(log.data[0]).toMatchObject({ id: sent.delivery_id, event_id: event.id, event_type: 'test', kind: 'test', attempt: 1, status: 'delivered', response_status: 200 });

    const replayed = body(await call(s.client, 'replay_webhook_delivery', { endpoint_id: ep.id, delivery_id: sent.delivery_id }));
    expect(replayed).toEqual({
      delivery_id: expect.stringMatching(/^dlv_/), status: 'delivered', response_status: 200, latency_ms: expect.any(Number), error: null, next_retry_at: null,
    });
    expect(replayed.delivery_id).not.toBe(sent.delivery_id);
    const again = s.mine().slice(before + 1);
    expect(again).toHaveLength(1);
    expect(again[0].body).toBe(req.body); // exactly the body sent the first time, so the same event id
    expect(again[0].headers['x-service-delivery']).toBe(replayed.delivery_id);

    const after = body(await call(s.client, 'list_webhook_deliveries', { endpoint_id: ep.id, limit: 1 }));
    expect(after.data).toEqual([expect.objectContaining({ id: replayed.delivery_id, kind: 'replay', event_id: event.id, status: 'delivered' })]);
    expect(after.next_cursor).toEqual(expect.any(String));
    expect(toolError(await call(s.client, 'replay_webhook_delivery', { endpoint_id: ep.id, delivery_id: 'dlv_00000000000000000000' })).error.code).toBe('not_found');
  });

  test('a failing receiver: the test result says failed with the receiver\'s status (a delivery result, not a tool error)', async () => {
    const s = await setup();
    const ep = body(await registerThroughMcp(s));
    await enableOnDashboard(s, ep.id); // awaiting enable, it would take no test event at all
    rx.script({ status: 500 });
    const r = await call(s.client, 'send_webhook_test', { endpoint_id: ep.id });
    expect(body(r)).toMatchObject({ status: 'failed', response_status: 500, error: 'receiver answered 500' });
    expect((r.content as Array<{ text: string }>)[0].text).toMatch(/delivery_id dlv_\w+, status failed/);
  });
});

describe('webhook limits answer as tool errors with the spec body and Retry-After (spec: Limits)', () => {
  test('test events: the 11th within a minute is rate_limited, scope webhook_test_per_minute, retry_after', async () => {
    const s = await setup();
    const ep = body(await registerThroughMcp(s));
    await enableOnDashboard(s, ep.id); // its own test event is the first of the 10
    for (let i = 1; i < MANUAL_DELIVERY_LIMITS.test.limit; i++) body(await call(s.client, 'send_webhook_test', { endpoint_id: ep.id }));
    const r = await call(s.client, 'send_webhook_test', { endpoint_id: ep.id });
    const e = toolError(r);
    expect(e).toMatchObject({ http_status: 429, error: { code: 'rate_limited', scope: 'webhook_test_per_minute', limit: 10 } });
    expect(e.error.retry_after).toBeGreaterThan(0);
    expect(e.error.retry_after).toBeLessThanOrEqual(60);
    expect((r.content as Array<{ text: string }>)[0].text).toMatch(/^rate_limited: .* Retry after \d+ s\.$/);
    expect(s.mine()).toHaveLength(MANUAL_DELIVERY_LIMITS.test.limit); // the enable's test and 9 more
  });

  test('replays: the 61st within an hour is rate_limited, scope webhook_replay_per_hour, retry_after', async () => {
    const s = await setup();
    const ep = body(await registerThroughMcp(s));
    await enableOnDashboard(s, ep.id); // its own test event first
    const { delivery_id } = body(await call(s.client, 'send_webhook_test', { endpoint_id: ep.id }));
    for (let i = 0; i < MANUAL_DELIVERY_LIMITS.replay.limit; i++) {
      expect(body(await call(s.client, 'replay_webhook_delivery', { endpoint_id: ep.id, delivery_id })).status).toBe('delivered');
    }
    const e = toolError(await call(s.client, 'replay_webhook_delivery', { endpoint_id: ep.id, delivery_id }));
    expect(e).toMatchObject({ http_status: 429, error: { code: 'rate_limited', scope: 'webhook_replay_per_hour', limit: 60 } });
    expect(e.error.retry_after).toBeGreaterThan(60);
    expect(e.error.retry_after).toBeLessThanOrEqual(3600);
    expect(s.mine()).toHaveLength(62);
  }, 60_000);
});

describe('scopes and account states (spec: Authentication 7-8; Account states)', () => {
  test('without webhooks:manage, tools/list hides the six webhook tools and calling each answers insufficient_scope', async () => {
    const s = await setup({ scopes: [] });
    const names = (await s.client.listTools()).tools.map((t) => t.name);
    for (const t of WEBHOOK_TOOLS) expect(names).not.toContain(t);
    const args: Record<string, Record<string, unknown>> = {
      list_webhooks: {},
      register_webhook: { url: rx.url('/never'), events: ['message.posted'], channels: 'all' },
      update_webhook: { endpoint_id: 'whe_00000000000000000000', enabled: false },
      send_webhook_test: { endpoint_id: 'whe_00000000000000000000' },
      list_webhook_deliveries: { endpoint_id: 'whe_00000000000000000000' },
      replay_webhook_delivery: { endpoint_id: 'whe_00000000000000000000', delivery_id: 'dlv_00000000000000000000' },
    };
    for (const name of WEBHOOK_TOOLS) {
      const e = toolError(await call(s.client, name, args[name]));
      expect([name, e.http_status, e.error.code, e.error.required_scope]).toEqual([name, 403, 'insufficient_scope', 'webhooks:manage']);
    }
  });

  test('an agent token with webhooks:manage sees all six', async () => {
    const acct = await newAccount(h);
    const agent = await newAgent(h, acct.accountId, acct.owner.email, ['webhooks:manage']);
    const names = (await (await h.connect(agent.token)).listTools()).tools.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(WEBHOOK_TOOLS));
  });

  test.each(['read_only', 'suspended'] as const)('a %s account answers the webhook tools with that error', async (state) => {
    const s = await setup();
    const ep = body(await registerThroughMcp(s));
    await h.deps.database.db.transaction((tx) => setAccountState(tx, s.acct.accountId, state));
    for (const [name, args] of [['list_webhooks', {}], ['send_webhook_test', { endpoint_id: ep.id }]] as const) {
      expect(toolError(await call(s.client, name, args))).toMatchObject({ http_status: 403, error: { code: state } });
    }
  });
});

describe('the webhook tools\' definitions (annotations; input schemas an agent can act on)', () => {
  test('annotations: reads are readOnly; update is destructive and idempotent; test and replay reach the receiver and are not idempotent', async () => {
    const s = await setup();
    const by = new Map((await s.client.listTools()).tools.map((t) => [t.name, t]));
    const hints = (name: string) => {
      const a = by.get(name)!.annotations!;
      return [a.readOnlyHint, a.destructiveHint, a.idempotentHint, a.openWorldHint];
    };
    expect(hints('list_webhooks')).toEqual([true, false, true, false]);
    expect(hints('list_webhook_deliveries')).toEqual([true, false, true, false]);
    expect(hints('register_webhook')).toEqual([false, false, false, false]);
    expect(hints('update_webhook')).toEqual([false, true, true, false]);
    expect(hints('send_webhook_test')).toEqual([false, false, false, true]);
    expect(hints('replay_webhook_delivery')).toEqual([false, false, false, true]);
  });

  test('events are the events module\'s one list (EVENT_TYPES, the REST route\'s SUBSCRIBABLE_EVENTS); payload and channels as the route takes them', async () => {
    const s = await setup();
    const by = new Map((await s.client.listTools()).tools.map((t) => [t.name, t]));
    for (const name of ['register_webhook', 'update_webhook']) {
      const props = by.get(name)!.inputSchema.properties as Record<string, any>;
      expect(props.events.items.enum).toEqual([...EVENT_TYPES]);
      expect(props.payload.enum).toEqual(['pointers', 'text']);
      expect(props.channels.anyOf).toEqual([expect.objectContaining({ const: 'all' }), expect.objectContaining({ type: 'array', maxItems: 500 })]);
      expect(props).not.toHaveProperty('client_ref'); // the route takes none: it would be dropped silently
    }
    expect(SUBSCRIBABLE_EVENTS).toBe(EVENT_TYPES);
    expect(by.get('register_webhook')!.inputSchema.required).toEqual(['url', 'events', 'channels']);
    expect(by.get('update_webhook')!.inputSchema.required).toEqual(['endpoint_id']);
    // `test` is subscribable (spec table), so a register listing it is accepted end to end
    body(await registerThroughMcp(s, { events: ['test'] }));
  });
});
