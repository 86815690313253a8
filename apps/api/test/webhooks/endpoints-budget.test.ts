import request from 'supertest';
import { addPerson, bearer, newKey, startHarness, type Harness } from '../../../../test/support/harness';
import { LOOPBACK_ONLY, hookUrl, register, registered, webhookAccount } from './endpoint-helpers';

/**
 * Spec: Limits, "Webhook endpoints per seat, summed for the account (Starter / Pro / Scale):
 * 3 / 10 / 25"; over it, 429 budget_exceeded with budget {limit, used, resets_at}.
 */
let h: Harness;
beforeAll(async () => { h = await startHarness(LOOPBACK_ONLY); });
afterAll(async () => { await h.close(); });

describe('Webhook endpoints per seat (spec: Limits)', () => {
  test('8 concurrent registrations on a one-seat Starter account: exactly 3 are created, 5 answer 429 budget_exceeded', async () => {
    const a = await webhookAccount(h, 'starter');
    const urls = await Promise.all(Array.from({ length: 8 }, () => hookUrl()));
    const answers = await Promise.all(urls.map((url) => a.key.post('/webhooks', { url, events: ['message.posted'], channels: 'all' })));
    const statuses = answers.map((r) => r.status).sort();
    expect(statuses).toEqual([201, 201, 201, 429, 429, 429, 429, 429]);
    for (const r of answers.filter((x) => x.status === 429)) {
      expect(r.body.error).toMatchObject({ code: 'budget_exceeded', scope: 'webhook_endpoints_per_seat', budget: { limit: 3, used: 3, resets_at: null } });
    }
    expect((await a.key.get('/webhooks')).body.data).toHaveLength(3);
  });

  test('the limit is per seat summed for the account: a second seat doubles it; a deleted endpoint frees its place', async () => {
    const a = await webhookAccount(h, 'starter');
    for (let i = 0; i < 3; i++) await registered(a.web);
    expect((await register(a.web)).status).toBe(429);
    await addPerson(h, a.accountId, 'member');
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await registered(a.web)).id);
    const over = await register(a.web);
    expect(over.status).toBe(429);
    expect(over.body.error.budget).toEqual({ limit: 6, used: 6, resets_at: null });
    expect((await a.web.del(`/webhooks/${ids[0]}`)).status).toBe(204);
    expect((await register(a.web)).status).toBe(201);
  });

  test('Pro allows 10 per seat', async () => {
    const a = await webhookAccount(h, 'pro');
    for (let i = 0; i < 10; i++) await registered(a.key);
    const over = await register(a.key);
    expect(over.status).toBe(429);
    expect(over.body.error.budget).toMatchObject({ limit: 10, used: 10 });
  });

  test('GET /accounts/{id} shows the endpoints used', async () => {
    const a = await webhookAccount(h, 'starter');
    await registered(a.web);
    const key = await newKey(h, a.accountId, a.owner.email, ['account:manage']);
    const res = await request(h.api).get(`/accounts/${a.accountId}`).set(bearer(key));
    expect(res.body.limits.webhook_endpoints_per_seat).toEqual({ limit: 3, account_limit: 3, used: 1 });
  });
});
