import request from 'supertest';
import { randomUUID } from 'node:crypto';
import { and, eq, identities, idempotencyKeys, sql } from '@teamchat/db';
import { addPerson, bearer, newAccount, newKey, signInWeb, startHarness, type Harness } from '../../../../test/support/harness';

let h: Harness;
beforeAll(async () => { h = await startHarness(); });
afterAll(async () => { await h.close(); });

async function agentCount(accountId: string): Promise<number> {
  const [row] = await h.deps.database.db
    .select({ n: sql<number>`count(*)::int` })
    .from(identities)
    .where(and(eq(identities.accountId, accountId), eq(identities.kind, 'agent')));
  return row.n;
}

async function setup() {
  const a = await newAccount(h);
  const key = await newKey(h, a.accountId, a.owner.email, ['identities:manage']);
  return { a, key, url: `/accounts/${a.accountId}/identities` };
}

describe('Limits rule 4: Idempotency-Key on creating POSTs', () => {
  test('a repeat with the same body returns the original status and body, flagged, and creates nothing', async () => {
    const { a, key, url } = await setup();
    const idem = randomUUID();
    const first = await request(h.api).post(url).set(bearer(key)).set('Idempotency-Key', idem).send({ name: 'bot', client_ref: 'r1' });
    expect(first.status).toBe(201);
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    const again = await request(h.api).post(url).set(bearer(key)).set('Idempotency-Key', idem).send({ client_ref: 'r1', name: 'bot' });
    expect(again.status).toBe(201);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body).toEqual(first.body);
    expect(await agentCount(a.accountId)).toBe(1);
  });

  test('the same key with a different body → 409 idempotency_conflict', async () => {
    const { a, key, url } = await setup();
    const idem = randomUUID();
    await request(h.api).post(url).set(bearer(key)).set('Idempotency-Key', idem).send({ name: 'bot' });
    const res = await request(h.api).post(url).set(bearer(key)).set('Idempotency-Key', idem).send({ name: 'other' });
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('idempotency_conflict');
    expect(await agentCount(a.accountId)).toBe(1);
  });

  test('a key that is not a UUID → 400 invalid_request', async () => {
    const { a, key, url } = await setup();
    const res = await request(h.api).post(url).set(bearer(key)).set('Idempotency-Key', 'not-a-uuid').send({ name: 'bot' });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'invalid_request', field: 'Idempotency-Key' });
    expect(await agentCount(a.accountId)).toBe(0);
  });

  test('concurrent requests with one key create exactly one object', async () => {
    const { a, key, url } = await setup();
    const idem = randomUUID();
    const answers = await Promise.all(
      Array.from({ length: 12 }, () => request(h.api).post(url).set(bearer(key)).set('Idempotency-Key', idem).send({ name: 'racer' })),
    );
    expect(answers.map((r) => r.status)).toEqual(Array(12).fill(201));
    expect(new Set(answers.map((r) => r.body.id)).size).toBe(1);
    expect(answers.filter((r) => r.headers['idempotent-replayed'] === 'true')).toHaveLength(11);
    expect(await agentCount(a.accountId)).toBe(1);
  });

  test("scoped to the credential's person: another person's same key creates its own object", async () => {
    const { a, key, url } = await setup();
    const admin = await addPerson(h, a.accountId, 'admin');
    const adminKey = await newKey(h, a.accountId, admin.email, ['identities:manage']);
    const idem = randomUUID();
    const mine = await request(h.api).post(url).set(bearer(key)).set('Idempotency-Key', idem).send({ name: 'bot' });
    const theirs = await request(h.api).post(url).set(bearer(adminKey)).set('Idempotency-Key', idem).send({ name: 'bot' });
    expect(theirs.headers['idempotent-replayed']).toBeUndefined();
    expect(theirs.body.id).not.toBe(mine.body.id);
    // Two keys of the same person share the scope.
    const myOtherKey = await newKey(h, a.accountId, a.owner.email, ['identities:manage']);
    const replay = await request(h.api).post(url).set(bearer(myOtherKey)).set('Idempotency-Key', idem).send({ name: 'bot' });
    expect(replay.body.id).toBe(mine.body.id);
    expect(await agentCount(a.accountId)).toBe(2);
  });

  test('the web host honours the same keys (same person, same route)', async () => {
    const { a, url } = await setup();
    const { agent, csrf } = await signInWeb(h, a.owner.email);
    const idem = randomUUID();
    const first = await agent.post(url).set('X-CSRF-Token', csrf).set('Idempotency-Key', idem).send({ name: 'w' });
    const again = await agent.post(url).set('X-CSRF-Token', csrf).set('Idempotency-Key', idem).send({ name: 'w' });
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body.id).toBe(first.body.id);
  });

  test('after 24 hours the key is forgotten and creates anew', async () => {
    const { a, key, url } = await setup();
    const idem = randomUUID();
    const first = await request(h.api).post(url).set(bearer(key)).set('Idempotency-Key', idem).send({ name: 'bot' });
    await h.deps.database.db
      .update(idempotencyKeys)
      .set({ createdAt: sql`now() - interval '25 hours'` })
      .where(eq(idempotencyKeys.key, idem));
    const later = await request(h.api).post(url).set(bearer(key)).set('Idempotency-Key', idem).send({ name: 'bot' });
    expect(later.headers['idempotent-replayed']).toBeUndefined();
    expect(later.body.id).not.toBe(first.body.id);
    expect(await agentCount(a.accountId)).toBe(2);
  });

  test('a request that fails stores nothing: the key can be used again', async () => {
    const { a, key, url } = await setup();
    const idem = randomUUID();
    const bad = await request(h.api).post(url).set(bearer(key)).set('Idempotency-Key', idem).send({ name: 'bot', scopes: ['no:such'] });
    expect(bad.status).toBe(400);
    const good = await request(h.api).post(url).set(bearer(key)).set('Idempotency-Key', idem).send({ name: 'bot' });
    expect(good.status).toBe(201);
    expect(good.headers['idempotent-replayed']).toBeUndefined();
    expect(await agentCount(a.accountId)).toBe(1);
  });
});

describe('Stored responses are sealed: a stored idempotent response that carries a secret is kept encrypted', () => {
  test("a new agent's token is not in the stored row in plaintext; the replay still returns it", async () => {
    const { a, key, url } = await setup();
    const idem = randomUUID();
    const first = await request(h.api).post(url).set(bearer(key)).set('Idempotency-Key', idem).send({ name: 'sealed-bot' });
    expect(first.status).toBe(201);
    const token = first.body.token as string;
    expect(token).toMatch(/^tc_agt_/);

    const rows = await h.deps.database.db.execute(
      sql`select response_body::text as body, response_headers::text as headers from idempotency_keys where key = ${idem}`,
    );
    const row = rows.rows[0] as { body: string; headers: string };
    expect(row.body).not.toContain(token);
    expect(row.body).not.toContain(token.slice(7)); // not even the random part
    expect(row.body).not.toContain('sealed-bot'); // the whole body is sealed, not only the token
    expect(row.headers).not.toContain(token);

    const again = await request(h.api).post(url).set(bearer(key)).set('Idempotency-Key', idem).send({ name: 'sealed-bot' });
    expect(again.status).toBe(201);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body).toEqual(first.body);
    expect(again.body.token).toBe(token);
    expect(await agentCount(a.accountId)).toBe(1);
  });
});
