import { MANUAL_DELIVERY_LIMITS, openWebhookSecret } from '@teamchat/core';
import { and, eq, notifications, sql, webhookDeliveries, webhookEndpoints, webhookHealthDeltas } from '@teamchat/db';
import { addPerson, newKey, startHarness, type Harness } from '../../../../test/support/harness';
import {
  LOOPBACK_ONLY, adminOf, agentClient, everything, hookUrl, insertDeliveries, keyClient, register, registered, webClient, webhookAccount,
} from './endpoint-helpers';

let h: Harness;
beforeAll(async () => { h = await startHarness(LOOPBACK_ONLY); });
afterAll(async () => { await h.close(); });

const WHSEC = /whsec_/;

async function endpointRow(id: string) {
  const [row] = await h.deps.database.db.select().from(webhookEndpoints).where(eq(webhookEndpoints.id, id));
  return row;
}

async function noticesOf(accountId: string) {
  return h.deps.database.db.select().from(notifications).where(eq(notifications.accountId, accountId)).orderBy(notifications.seq);
}

describe('Webhook endpoint enablement: registration (spec table rows 1 and 2)', () => {
  test('through an API key: disabled awaiting_enable, secret_pending_reveal, no secret anywhere, owners and admins notified', async () => {
    const a = await webhookAccount(h);
    const admin = await adminOf(h, a.accountId);
    const res = await register(a.key, { events: ['message.posted', 'mention'] });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      enabled: false, disabled_reason: 'awaiting_enable', secret_pending_reveal: true, previous_valid_until: null,
      authorization_set: false, events: ['message.posted', 'mention'], channels: 'all', payload: 'pointers', created_via: 'api_key',
      enabled_at: null,
    });
    expect(res.body.id).toMatch(/^whe_/);
    expect(res.body).not.toHaveProperty('secret');
    expect(everything(res)).not.toMatch(WHSEC);
    // Encrypted at rest: the column holds an AES-GCM ciphertext that opens to a whsec_ secret.
    const row = await endpointRow(res.body.id);
    expect(row.secretEnc).toMatch(/^v1\./);
    expect(row.secretEnc).not.toMatch(WHSEC);
    expect(openWebhookSecret(h.deps.config, row.secretEnc)).toMatch(/^whsec_/);
    expect(everything(res)).not.toContain(row.secretEnc);
    const notes = await noticesOf(a.accountId);
    expect(notes.map((n) => n.userId).sort()).toEqual([a.owner.userId, admin.user_id].sort());
    expect(notes[0]).toMatchObject({ kind: 'webhook.awaiting_enable', data: expect.objectContaining({ endpoint_id: res.body.id, reason: 'registered' }) });
  });

  test('through an agent token: the same (awaiting_enable, no secret)', async () => {
    const a = await webhookAccount(h);
    const agent = await agentClient(h, a);
    const res = await register(agent);
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ enabled: false, disabled_reason: 'awaiting_enable', secret_pending_reveal: true, created_via: 'agent_token' });
    expect(everything(res)).not.toMatch(WHSEC);
  });

  test('on the dashboard (web session): enabled at once, the secret shown once in that answer, never again', async () => {
    const a = await webhookAccount(h);
    const res = await register(a.web);
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ enabled: true, disabled_reason: null, secret_pending_reveal: false, created_via: 'web_session' });
    expect(res.body.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(res.body.enabled_at).not.toBeNull();
    expect(openWebhookSecret(h.deps.config, (await endpointRow(res.body.id)).secretEnc)).toBe(res.body.secret);
    for (const later of [await a.web.get(`/webhooks/${res.body.id}`), await a.web.get('/webhooks'), await a.key.get('/webhooks')]) {
      expect(later.status).toBe(200);
      expect(everything(later)).not.toMatch(WHSEC);
    }
    expect(await noticesOf(a.accountId)).toHaveLength(0);
  });

  test('a credential asking enabled: true → 403 forbidden, reason web_session_required; nothing is created', async () => {
    const a = await webhookAccount(h);
    const res = await register(a.key, { enabled: true });
    expect(res.status).toBe(403);
    expect(res.body.error).toMatchObject({ code: 'forbidden', reason: 'web_session_required' });
    expect((await a.key.get('/webhooks')).body.data).toHaveLength(0);
  });

  test('a credential setting the custom header (authorization) → 403 web_session_required', async () => {
    const a = await webhookAccount(h);
    for (const authorization of ['tok-123', null]) {
      const res = await register(a.key, { authorization });
      expect(res.status).toBe(403);
      expect(res.body.error).toMatchObject({ code: 'forbidden', reason: 'web_session_required' });
    }
  });

  test('an Idempotency-Key replay of a dashboard registration creates nothing more and never shows the secret again', async () => {
    const a = await webhookAccount(h);
    const body = { url: await hookUrl(), events: ['message.posted'], channels: 'all' };
    const key = '4f9d2c1e-1b2a-4c3d-8e9f-0a1b2c3d4e5f';
    const first = await a.web.post('/webhooks', body).set('Idempotency-Key', key);
    expect(first.status).toBe(201);
    expect(first.body.secret).toMatch(/^whsec_/);
    const again = await a.web.post('/webhooks', body).set('Idempotency-Key', key);
    expect(again.status).toBe(201);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body.id).toBe(first.body.id);
    expect(everything(again)).not.toMatch(WHSEC);
    expect((await a.web.get('/webhooks')).body.data).toHaveLength(1);
  });
});

describe('Webhook payload rules (spec: "Webhook endpoint payload on register/change")', () => {
  test('events must be known names, at least one; payload pointers or text; url required', async () => {
    const a = await webhookAccount(h);
    // Every name of the spec's "Subscribable events" table is accepted (`test` included).
    const all = ['message.posted', 'message.edited', 'message.deleted', 'thread.replied', 'mention', 'dm.received',
      'channel.created', 'channel.deleted', 'reaction.added', 'reaction.removed', 'session.evicted', 'test'];
    const ok = await register(a.web, { events: all });
    expect([ok.status, ok.body.events]).toEqual([201, all]);
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ events: [] }, 'events'],
      [{ events: ['message.sent'] }, 'events.0'],
      [{ events: ['message.posted', 'message.posted'] }, 'events.1'],
      [{ payload: 'html' }, 'payload'],
      [{ channels: [] }, 'channels'],
      [{ channels: 'some' }, 'channels'],
      [{ url: undefined }, 'url'],
    ];
    for (const [body, field] of cases) {
      const res = await register(a.web, body);
      expect([res.status, res.body.error?.code, res.body.error?.field]).toEqual([400, 'invalid_request', field]);
    }
  });

  test('channels: `all` or ids of regular channels of this account (unknown, foreign or DM ids → 400 field channels)', async () => {
    const a = await webhookAccount(h);
    const b = await webhookAccount(h);
    const mine = await a.web.post('/channels', { name: 'hooks' });
    const theirs = await b.web.post('/channels', { name: 'theirs' });
    const bob = await addPerson(h, a.accountId, 'member');
    const dm = await a.web.post('/dms', { members: [bob.identity_id] });
    expect(dm.status).toBe(201);
    const ok = await register(a.web, { channels: [mine.body.id] });
    expect(ok.status).toBe(201);
    expect(ok.body.channels).toEqual([mine.body.id]);
    for (const id of ['ch_doesnotexist', theirs.body.id, dm.body.id]) {
      const res = await register(a.web, { channels: [mine.body.id, id] });
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ code: 'invalid_request', field: 'channels', reason: 'unknown_channel', channel_ids: [id] });
    }
  });
});

describe('Webhook endpoint enablement: changes (spec table row 3), manual disable (row 7)', () => {
  test('a credential changing the URL of an enabled endpoint → disabled awaiting_enable, owners and admins notified', async () => {
    const a = await webhookAccount(h);
    const ep = await registered(a.web);
    const res = await a.key.patch(`/webhooks/${ep.id}`, { url: await hookUrl('/moved') });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ enabled: false, disabled_reason: 'awaiting_enable' });
    expect(res.body.disabled_at).not.toBeNull();
    const notes = await noticesOf(a.accountId);
    expect(notes).toHaveLength(1);
    expect(notes[0]).toMatchObject({ kind: 'webhook.awaiting_enable', userId: a.owner.userId, data: expect.objectContaining({ reason: 'url_changed' }) });
  });

  test('a credential switching payload to text → disabled awaiting_enable; other credential changes keep it enabled', async () => {
    const a = await webhookAccount(h);
    const ep = await registered(a.web);
    const harmless = await a.key.patch(`/webhooks/${ep.id}`, { events: ['mention'], payload: 'pointers', url: ep.url });
    expect(harmless.body).toMatchObject({ enabled: true, events: ['mention'] });
    const res = await a.key.patch(`/webhooks/${ep.id}`, { payload: 'text' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ enabled: false, disabled_reason: 'awaiting_enable', payload: 'text' });
    expect((await noticesOf(a.accountId)).map((n) => n.data)).toEqual([expect.objectContaining({ reason: 'payload_text' })]);
  });

  test('a web session changing the URL or payload keeps the endpoint enabled', async () => {
    const a = await webhookAccount(h);
    const ep = await registered(a.web);
    const res = await a.web.patch(`/webhooks/${ep.id}`, { url: await hookUrl('/v2'), payload: 'text' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ enabled: true, disabled_reason: null, payload: 'text' });
  });

  test('PATCH enabled: false by an owner or admin → disabled manual, notified; again on a disabled endpoint changes nothing', async () => {
    const a = await webhookAccount(h);
    const ep = await registered(a.web);
    const res = await a.key.patch(`/webhooks/${ep.id}`, { enabled: false });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ enabled: false, disabled_reason: 'manual' });
    const notes = await noticesOf(a.accountId);
    expect(notes.map((n) => [n.kind, (n.data as { reason: string }).reason])).toEqual([['webhook.disabled', 'manual']]);
    const pending = await registered(a.key);
    const still = await a.web.patch(`/webhooks/${pending.id}`, { enabled: false });
    expect(still.body).toMatchObject({ enabled: false, disabled_reason: 'awaiting_enable' });
  });

  test('disabling (manual, or awaiting_enable after a credential\'s change) drops the open deliveries at once, as automatic disabling does', async () => {
    const a = await webhookAccount(h);
    for (const [body, reason] of [[{ enabled: false }, 'manual'], [{ payload: 'text' }, 'awaiting_enable']] as const) {
      const ep = await registered(a.web);
      const [done, open, waiting] = await insertDeliveries(h, {
        accountId: a.accountId, endpointId: ep.id, rows: [{ status: 'delivered', attemptedAt: new Date(), latencyMs: 5 }, { status: 'pending' }, { status: 'retrying' }],
      });
      expect((await a.key.patch(`/webhooks/${ep.id}`, body)).body.disabled_reason).toBe(reason);
      const rows = new Map((await h.deps.database.db.select().from(webhookDeliveries).where(eq(webhookDeliveries.endpointId, ep.id))).map((r) => [r.id, r]));
      expect(rows.get(done)!.status).toBe('delivered');
      for (const id of [open, waiting]) expect(rows.get(id)).toMatchObject({ status: 'dead', error: `dropped: endpoint disabled (${reason})`, nextRetryAt: null });
      expect((await a.web.get(`/webhooks/${ep.id}`)).body.health.pending_count).toBe(0);
    }
  });

  test('a credential PATCH asking enabled: true or setting authorization → 403 web_session_required, nothing changes', async () => {
    const a = await webhookAccount(h);
    const ep = await registered(a.key);
    for (const body of [{ enabled: true }, { authorization: 'x' }, { authorization: null }]) {
      const res = await a.key.patch(`/webhooks/${ep.id}`, body);
      expect(res.status).toBe(403);
      expect(res.body.error).toMatchObject({ code: 'forbidden', reason: 'web_session_required' });
    }
    expect((await endpointRow(ep.id)).version).toBe(1);
  });

  test('If-Match with a stale version → 412 stale; GET and PATCH carry the version as ETag', async () => {
    const a = await webhookAccount(h);
    const ep = await registered(a.web);
    const got = await a.web.get(`/webhooks/${ep.id}`);
    expect(got.headers.etag).toBe('"1"');
    const ok = await a.web.patch(`/webhooks/${ep.id}`, { events: ['mention'] }).set('If-Match', '"1"');
    expect(ok.headers.etag).toBe('"2"');
    const stale = await a.web.patch(`/webhooks/${ep.id}`, { events: ['dm.received'] }).set('If-Match', '"1"');
    expect(stale.status).toBe(412);
    expect(stale.body.error).toMatchObject({ code: 'stale', current_version: 2 });
  });
});

describe('Webhook endpoint enablement: enabling (rows 4 and 9; Delivery behaviour rule 6)', () => {
  test('from awaiting_enable, on the dashboard: enabled, enabled_at = now, a test delivery first and its result in the answer; the enable stands when it fails', async () => {
    const a = await webhookAccount(h);
    const ep = await registered(a.key);
    const before = Date.now();
    const res = await a.web.patch(`/webhooks/${ep.id}`, { enabled: true });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ enabled: true, disabled_reason: null, disabled_at: null });
    expect(new Date(res.body.enabled_at).getTime()).toBeGreaterThanOrEqual(before - 1000);
    // Nothing listens at the URL: the test fails, and the endpoint is enabled all the same.
    expect(res.body.test_delivery).toMatchObject({ status: 'failed', response_status: null });
    expect(Object.keys(res.body.test_delivery).sort()).toEqual(['delivery_id', 'error', 'latency_ms', 'response_status', 'status']);
    expect(typeof res.body.test_delivery.error).toBe('string');
    expect((await a.web.get(`/webhooks/${ep.id}`)).body.enabled).toBe(true);
  });

  test('from any disabled reason (manual, failing, gone, slow) enabling works and clears the failing window; enabling an enabled endpoint sends no test', async () => {
    const a = await webhookAccount(h);
    for (const reason of ['manual', 'failing', 'gone', 'slow']) {
      const ep = await registered(a.web);
      await h.deps.database.db.update(webhookEndpoints)
        .set({ enabled: false, disabledReason: reason, disabledAt: new Date(), failingSince: new Date(Date.now() - 86_400_000) })
        .where(eq(webhookEndpoints.id, ep.id));
      const enabledFrom = Date.now();
      const res = await a.web.patch(`/webhooks/${ep.id}`, { enabled: true });
      expect([reason, res.status, res.body.enabled, res.body.test_delivery?.status]).toEqual([reason, 200, true, 'failed']);
      // The old failing window is gone: the failed test event alone cannot disable it again as
      // `failing` (a window, if any, now starts at that test's failure).
      const row = await endpointRow(ep.id);
      expect(row.enabled).toBe(true);
      expect(row.failingSince === null || row.failingSince.getTime() >= enabledFrom - 1000).toBe(true);
    }
    const on = await registered(a.web);
    const again = await a.web.patch(`/webhooks/${on.id}`, { enabled: true });
    expect(again.status).toBe(200);
    expect(again.body).not.toHaveProperty('test_delivery');
    expect(again.body.enabled_at).toBe(on.enabled_at);
  });
});

describe('Enabling counts against the test events limit (spec: Limits, test events 10 per minute per endpoint)', () => {
  test('with the endpoint\'s 10 test events of the minute spent, enabling is refused 429 rate_limited and nothing changes', async () => {
    const a = await webhookAccount(h);
    const ep = await registered(a.web);
    const off = await a.web.patch(`/webhooks/${ep.id}`, { enabled: false });
    expect(off.body).toMatchObject({ enabled: false, disabled_reason: 'manual' });
    // A disabled endpoint still takes tests (nothing listens at its URL: each fails at once).
    for (let i = 0; i < MANUAL_DELIVERY_LIMITS.test.limit; i++) expect((await a.web.post(`/webhooks/${ep.id}/test`, {})).status).toBe(200);
    const res = await a.web.patch(`/webhooks/${ep.id}`, { enabled: true });
    expect(res.status).toBe(429);
    expect(res.body.error).toMatchObject({ code: 'rate_limited', scope: 'webhook_test_per_minute' });
    expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
    const row = await endpointRow(ep.id);
    expect(row).toMatchObject({ enabled: false, disabledReason: 'manual', version: off.body.version });
    const tests = await h.deps.database.db.select().from(webhookDeliveries).where(and(eq(webhookDeliveries.endpointId, ep.id), eq(webhookDeliveries.kind, 'test')));
    expect(tests).toHaveLength(MANUAL_DELIVERY_LIMITS.test.limit);
  });
});

describe('Reveal (web session only, exactly once)', () => {
  test("a credential-created endpoint's secret: refused to credentials, shown once on the dashboard, then 403", async () => {
    const a = await webhookAccount(h);
    const ep = await registered(a.key);
    const byKey = await a.key.post(`/webhooks/${ep.id}/reveal`);
    expect(byKey.status).toBe(403);
    expect(byKey.body.error).toMatchObject({ code: 'forbidden', reason: 'web_session_required' });
    const first = await a.web.post(`/webhooks/${ep.id}/reveal`);
    expect(first.status).toBe(200);
    expect(first.headers['cache-control']).toBe('no-store');
    expect(first.body).toMatchObject({ id: ep.id, secret_pending_reveal: false });
    expect(first.body.secret).toBe(openWebhookSecret(h.deps.config, (await endpointRow(ep.id)).secretEnc));
    const second = await a.web.post(`/webhooks/${ep.id}/reveal`);
    expect(second.status).toBe(403);
    expect(second.body.error).toMatchObject({ code: 'forbidden', reason: 'secret_not_pending_reveal' });
    expect(everything(second)).not.toMatch(WHSEC);
  });

  test('two concurrent reveals: exactly one sees the secret', async () => {
    const a = await webhookAccount(h);
    const ep = await registered(a.key);
    const other = await webClient(h, a.accountId, a.owner.email);
    const answers = await Promise.all([a.web.post(`/webhooks/${ep.id}/reveal`), other.post(`/webhooks/${ep.id}/reveal`)]);
    expect(answers.map((r) => r.status).sort()).toEqual([200, 403]);
  });

  test('an endpoint registered on the dashboard (secret already shown) → 403; an unknown endpoint → 404', async () => {
    const a = await webhookAccount(h);
    const ep = await registered(a.web);
    expect((await a.web.post(`/webhooks/${ep.id}/reveal`)).body.error.reason).toBe('secret_not_pending_reveal');
    expect((await a.web.post('/webhooks/whe_doesnotexist/reveal')).status).toBe(404);
  });
});

describe('Secret rotation (spec: old secret signs alongside for 24 hours, previous_valid_until)', () => {
  afterEach(() => h.clock.reset());

  test('rotate: refused to credentials; a new secret once, the old one kept until previous_valid_until', async () => {
    const a = await webhookAccount(h);
    const ep = await registered(a.web);
    const byKey = await a.key.post(`/webhooks/${ep.id}/rotate`);
    expect(byKey.status).toBe(403);
    expect(byKey.body.error.reason).toBe('web_session_required');
    const t0 = new Date(Date.now() + 60_000);
    h.clock.set(t0);
    const res = await a.web.post(`/webhooks/${ep.id}/rotate`);
    expect(res.status).toBe(200);
    expect(res.body.secret).toMatch(/^whsec_/);
    expect(res.body.secret).not.toBe(ep.secret);
    expect(res.body.previous_valid_until).toBe(new Date(t0.getTime() + 24 * 3_600_000).toISOString());
    const row = await endpointRow(ep.id);
    expect(openWebhookSecret(h.deps.config, row.secretEnc)).toBe(res.body.secret);
    expect(openWebhookSecret(h.deps.config, row.previousSecretEnc!)).toBe(ep.secret);
    expect(everything(await a.web.get(`/webhooks/${ep.id}`))).not.toMatch(WHSEC);
    // Past the overlap the old secret no longer counts and the field goes back to null.
    h.clock.set(new Date(t0.getTime() + 24 * 3_600_000 + 1000));
    expect((await a.web.get(`/webhooks/${ep.id}`)).body.previous_valid_until).toBeNull();
  });

  test('rotating again during the overlap keeps only the secret just superseded as the previous one', async () => {
    const a = await webhookAccount(h);
    const ep = await registered(a.web);
    const r1 = await a.web.post(`/webhooks/${ep.id}/rotate`);
    const r2 = await a.web.post(`/webhooks/${ep.id}/rotate`);
    const row = await endpointRow(ep.id);
    expect(openWebhookSecret(h.deps.config, row.secretEnc)).toBe(r2.body.secret);
    expect(openWebhookSecret(h.deps.config, row.previousSecretEnc!)).toBe(r1.body.secret);
  });

  test('rotating a credential-created endpoint supersedes the unrevealed secret', async () => {
    const a = await webhookAccount(h);
    const ep = await registered(a.key);
    const res = await a.web.post(`/webhooks/${ep.id}/rotate`);
    expect(res.body).toMatchObject({ secret_pending_reveal: false });
    expect((await a.web.post(`/webhooks/${ep.id}/reveal`)).status).toBe(403);
  });
});

describe('The custom header (authorization): set on the dashboard only, never returned', () => {
  test('a string sets it, null clears it; answers only show authorization_set; stored encrypted', async () => {
    const a = await webhookAccount(h);
    const token = 'receiver-token-5f1e2d3c';
    const res = await register(a.web, { authorization: token });
    expect(res.status).toBe(201);
    expect(res.body.authorization_set).toBe(true);
    expect(everything(res)).not.toContain(token);
    const row = await endpointRow(res.body.id);
    expect(row.authorizationEnc).not.toContain(token);
    expect(openWebhookSecret(h.deps.config, row.authorizationEnc!)).toBe(token);
    for (const r of [await a.web.get(`/webhooks/${res.body.id}`), await a.key.get('/webhooks')]) expect(everything(r)).not.toContain(token);
    const changed = await a.web.patch(`/webhooks/${res.body.id}`, { authorization: 'other-token' });
    expect(changed.body.authorization_set).toBe(true);
    expect(everything(changed)).not.toContain('other-token');
    const cleared = await a.web.patch(`/webhooks/${res.body.id}`, { authorization: null });
    expect(cleared.body.authorization_set).toBe(false);
    expect((await endpointRow(res.body.id)).authorizationEnc).toBeNull();
    const bad = await a.web.patch(`/webhooks/${res.body.id}`, { authorization: 'has space' });
    expect(bad.status).toBe(400);
    expect(bad.body.error.field).toBe('authorization');
  });
});

describe('webhooks:manage (Authentication rules 7 and 8)', () => {
  test("a member's web session → 403 forbidden on every webhook route; a key without the scope → insufficient_scope", async () => {
    const a = await webhookAccount(h);
    const ep = await registered(a.web);
    const member = await addPerson(h, a.accountId, 'member');
    const mweb = await webClient(h, a.accountId, member.email);
    for (const res of [
      await mweb.get('/webhooks'), await register(mweb), await mweb.get(`/webhooks/${ep.id}`),
      await mweb.patch(`/webhooks/${ep.id}`, { enabled: false }), await mweb.del(`/webhooks/${ep.id}`),
      await mweb.post(`/webhooks/${ep.id}/reveal`), await mweb.post(`/webhooks/${ep.id}/rotate`),
    ]) {
      expect([res.status, res.body.error?.code]).toEqual([403, 'forbidden']);
    }
    const plain = keyClient(h, a.accountId, await newKey(h, a.accountId, a.owner.email, ['channels:manage']));
    const res = await plain.get('/webhooks');
    expect(res.body.error).toMatchObject({ code: 'insufficient_scope', required_scope: 'webhooks:manage' });
  });
});

describe('List and get with health (spec: "Lists carry health")', () => {
  test('last success, last failure, success rate over 24 h, median latency of the last 50, pending count; cursor-paged', async () => {
    const a = await webhookAccount(h);
    const ep = await registered(a.web);
    const quiet = await registered(a.key);
    const hour = 3_600_000;
    const now = Date.now();
    await insertDeliveries(h, {
      accountId: a.accountId, endpointId: ep.id, rows: [
        { status: 'dead', attemptedAt: new Date(now - 30 * hour), latencyMs: 5000, responseStatus: 500 },
        { status: 'delivered', attemptedAt: new Date(now - 3 * hour), latencyMs: 100, responseStatus: 200 },
        { status: 'failed', attemptedAt: new Date(now - 2 * hour), latencyMs: 1000, responseStatus: 503 },
        { status: 'delivered', attemptedAt: new Date(now - hour), latencyMs: 300, responseStatus: 204 },
        { status: 'pending' },
        { status: 'retrying' },
      ],
    });
    const first = await a.web.get('/webhooks?limit=1');
    expect(first.status).toBe(200);
    expect(first.body.data).toHaveLength(1);
    expect(first.body.data[0].id).toBe(ep.id);
    expect(first.body.data[0].health).toEqual({
      last_success_at: new Date(now - hour).toISOString(),
      last_failure_at: new Date(now - 2 * hour).toISOString(),
      success_rate_24h: 2 / 3,
      attempts_24h: 3,
      median_latency_ms: 650, // median of 5000, 100, 1000, 300
      pending_count: 2,
    });
    const second = await a.web.get(`/webhooks?limit=1&cursor=${encodeURIComponent(first.body.next_cursor)}`);
    expect(second.body.data.map((e: { id: string }) => e.id)).toEqual([quiet.id]);
    expect(second.body.data[0]).toMatchObject({
      disabled_reason: 'awaiting_enable',
      health: { last_success_at: null, last_failure_at: null, success_rate_24h: null, attempts_24h: 0, median_latency_ms: null, pending_count: 0 },
    });
    expect(second.body.next_cursor).toBeNull();
    expect((await a.web.get(`/webhooks/${ep.id}`)).body.health.pending_count).toBe(2);
    expect((await a.web.get('/webhooks?cursor=garbage')).body.error.code).toBe('invalid_cursor');
  });

  test('the median counts only the last 50 attempts', async () => {
    const a = await webhookAccount(h);
    const ep = await registered(a.web);
    const at = new Date();
    // 10 slow attempts, then 50 fast ones: the slow ones fall outside the window.
    await insertDeliveries(h, { accountId: a.accountId, endpointId: ep.id, rows: Array.from({ length: 10 }, () => ({ status: 'delivered', attemptedAt: at, latencyMs: 9000 })) });
    await insertDeliveries(h, { accountId: a.accountId, endpointId: ep.id, rows: Array.from({ length: 50 }, (_, i) => ({ status: 'delivered', attemptedAt: at, latencyMs: 10 + i })) });
    expect((await a.web.get(`/webhooks/${ep.id}`)).body.health.median_latency_ms).toBe(35); // median of 10..59 = 34.5
  });

  test('an update that changes no tracked column (a claim, its give-back) writes no health delta; a status change does', async () => {
    const a = await webhookAccount(h);
    const ep = await registered(a.web);
    const [id] = await insertDeliveries(h, { accountId: a.accountId, endpointId: ep.id, rows: [{ status: 'pending' }] });
    // One snapshot: a maintenance pass folding deltas meanwhile cannot change the count under the test.
    await h.deps.database.db.transaction(async (tx) => {
      const deltas = async () => (await tx.select().from(webhookHealthDeltas).where(eq(webhookHealthDeltas.endpointId, ep.id))).length;
      const before = await deltas();
      await tx.update(webhookDeliveries).set({ claimedUntil: new Date(Date.now() + 15_000) }).where(eq(webhookDeliveries.id, id));
      await tx.update(webhookDeliveries).set({ claimedUntil: null, nextRetryAt: new Date(), error: 'waiting' }).where(eq(webhookDeliveries.id, id));
      expect(await deltas()).toBe(before);
      await tx.update(webhookDeliveries).set({ status: 'delivered', attemptedAt: new Date(), latencyMs: 42, responseStatus: 200, claimedUntil: null }).where(eq(webhookDeliveries.id, id));
      expect(await deltas()).toBe(before + 1);
    }, { isolationLevel: 'repeatable read' });
    expect((await a.web.get(`/webhooks/${ep.id}`)).body.health).toMatchObject({ pending_count: 0, attempts_24h: 1, median_latency_ms: 42 });
  });

  test('a bulk update of 20,000 rows that changes no tracked column finishes and writes no delta (the trigger compares before and after as sets)', async () => {
    // A complexity guard, not a speed target: the first version of the trigger's early return
    // joined the statement's transition tables, planned as a nested loop, quadratic (~12 s at
    // this size, past the pool's 5 s statement bound; ~0.3 s now). A bulk `next_retry_at` update
    // is what a units reset or an operator writes.
    const a = await webhookAccount(h);
    const ep = await registered(a.web);
    const db = h.deps.database.db;
    // One row through the helper; the rest share its stored body.
    const [first] = await insertDeliveries(h, { accountId: a.accountId, endpointId: ep.id, rows: [{ status: 'pending' }] });
    const [{ bodyId }] = await db.select({ bodyId: webhookDeliveries.bodyId }).from(webhookDeliveries).where(eq(webhookDeliveries.id, first));
    await db.execute(sql`
      INSERT INTO webhook_deliveries (id, account_id, endpoint_id, event_id, event_type, body_id, kind, chain_id, attempt, status, next_retry_at, event_created_at)
      SELECT 'dlv_bulk_' || ${ep.id} || '_' || i, ${a.accountId}, ${ep.id}, 'evt_bulk_' || i, 'message.posted', ${bodyId}, 'event',
             'dlv_bulk_' || ${ep.id} || '_' || i, 1, 'retrying', now() + interval '1 hour', now()
        FROM generate_series(1, 20000) i`);
    await db.transaction(async (tx) => {
      const deltas = async () => (await tx.select().from(webhookHealthDeltas).where(eq(webhookHealthDeltas.endpointId, ep.id))).length;
      const before = await deltas();
      const updated = await tx.execute(sql`UPDATE webhook_deliveries SET next_retry_at = now() WHERE endpoint_id = ${ep.id} AND status = 'retrying'`);
      expect(updated.rowCount).toBe(20_000);
      expect(await deltas()).toBe(before);
    }, { isolationLevel: 'repeatable read' });
    expect((await a.web.get(`/webhooks/${ep.id}`)).body.health.pending_count).toBe(20_001);
  }, 60_000);

  test("another account's endpoint is not found", async () => {
    const a = await webhookAccount(h);
    const b = await webhookAccount(h);
    const ep = await registered(b.web);
    expect((await a.web.get(`/webhooks/${ep.id}`)).status).toBe(404);
    expect((await a.web.patch(`/webhooks/${ep.id}`, { enabled: false })).status).toBe(404);
    expect((await a.web.del(`/webhooks/${ep.id}`)).status).toBe(404);
  });
});

describe('DELETE (spec: "remove it; pending deliveries are dropped")', () => {
  test('sets deleted_at; pending and retrying deliveries are dropped (dead, "dropped: endpoint deleted"); finished ones stay', async () => {
    const a = await webhookAccount(h);
    const ep = await registered(a.web);
    const [delivered, pending, retrying, dead] = await insertDeliveries(h, {
      accountId: a.accountId, endpointId: ep.id, rows: [
        { status: 'delivered', attemptedAt: new Date(), latencyMs: 20 }, { status: 'pending' }, { status: 'retrying' }, { status: 'dead', attemptedAt: new Date() },
      ],
    });
    const res = await a.key.del(`/webhooks/${ep.id}`);
    expect(res.status).toBe(204);
    const rows = await h.deps.database.db.select().from(webhookDeliveries).where(and(eq(webhookDeliveries.endpointId, ep.id)));
    const byId = new Map(rows.map((r) => [r.id, r]));
    expect(byId.get(delivered)!.status).toBe('delivered');
    expect(byId.get(dead)!.status).toBe('dead');
    for (const id of [pending, retrying]) expect(byId.get(id)).toMatchObject({ status: 'dead', error: 'dropped: endpoint deleted', nextRetryAt: null });
    expect(byId.get(dead)!.error).toBeNull();
    const row = await endpointRow(ep.id);
    expect(row.deletedAt).not.toBeNull();
    expect(row.enabled).toBe(false);
    expect((await a.key.get(`/webhooks/${ep.id}`)).status).toBe(404);
    expect((await a.key.del(`/webhooks/${ep.id}`)).status).toBe(404);
    expect((await a.key.get('/webhooks')).body.data).toHaveLength(0);
  });
});
