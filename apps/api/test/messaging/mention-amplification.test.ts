import request from 'supertest';
import { MENTION_EVENTS_MAX, PLAN_LIMITS } from '@teamchat/core';
import { addPerson, bearer, newAccount, newAgent, newKey, startHarness, type Harness } from '../../../../test/support/harness';
import { byType, eventsOf, makeChannel, messagingAccount, post } from '../../../../test/support/messaging';

let h: Harness;
beforeAll(async () => { h = await startHarness(); });
afterAll(async () => { await h.close(); });

describe('Mentions: one post raises at most 20 mention events (docs/api.md "Mentions")', () => {
  test('a post mentioning 50 identities succeeds, keeps all 50 mentions, and raises mention events for the first 20 in text order only', async () => {
    const a = await messagingAccount(h);
    const agents = [];
    for (let i = 0; i < 50; i++) agents.push((await newAgent(h, a.accountId, a.owner.email, [])).identity.id);
    const channel = await makeChannel(a.ownerApi);
    // The author's own mention first: it raises no event and takes no place among the 20.
    const text = [`<@${a.owner.identityId}>`, ...agents.map((id) => `<@${id}>`)].join(' ');
    const posted = await post(a.ownerApi, channel, { text });
    expect(posted.mentions).toHaveLength(50);
    const mentions = byType(await eventsOf(h, a.accountId), 'mention');
    expect(MENTION_EVENTS_MAX).toBe(20);
    expect(mentions).toHaveLength(20);
    expect(mentions.map((e) => (e.data as { to: string }).to)).toEqual(agents.slice(0, 20));
  });
});

describe('Agents per seat per day (docs/api.md "Agents per seat per day")', () => {
  const register = (accountId: string, key: string, name: string) =>
    request(h.api).post(`/accounts/${accountId}/identities`).set(bearer(key)).send({ name });

  test('a Starter member registers 10 agents a day; the 11th answers 429 budget_exceeded with budget {limit, used, resets_at}; another seat is not affected', async () => {
    const a = await newAccount(h, 'starter');
    const member = await addPerson(h, a.accountId, 'member');
    const key = await newKey(h, a.accountId, member.email, ['identities:manage']);
    const limit = PLAN_LIMITS.starter.agentsPerSeatPerDay;
    expect(limit).toBe(10);
    for (let i = 0; i < limit; i++) expect((await register(a.accountId, key, `bot-${i}`)).status).toBe(201);
    const over = await register(a.accountId, key, 'one-too-many');
    expect(over.status).toBe(429);
    const midnight = new Date(Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), new Date().getUTCDate() + 1));
    expect(over.body.error).toMatchObject({
      code: 'budget_exceeded', scope: 'agents_per_seat_per_day', budget: { limit: 10, used: 10, resets_at: midnight.toISOString() },
    });
    expect(Number(over.headers['retry-after'])).toBeGreaterThan(0);
    const ownerKey = await newKey(h, a.accountId, a.owner.email, ['identities:manage']);
    expect((await register(a.accountId, ownerKey, 'owners-bot')).status).toBe(201);
  });

  test('a concurrent burst of 25 registrations on a Starter seat: exactly 10 succeed, 15 answer 429 budget_exceeded', async () => {
    const a = await newAccount(h, 'starter');
    const member = await addPerson(h, a.accountId, 'member');
    const key = await newKey(h, a.accountId, member.email, ['identities:manage']);
    const answers = await Promise.all(Array.from({ length: 25 }, (_, i) => register(a.accountId, key, `burst-${i}`)));
    const statuses = answers.map((r) => r.status);
    expect(statuses.filter((s) => s === 201)).toHaveLength(10);
    expect(statuses.filter((s) => s === 429)).toHaveLength(15);
    for (const r of answers.filter((x) => x.status === 429)) expect(r.body.error.code).toBe('budget_exceeded');
  });
});
