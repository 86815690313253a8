import request from 'supertest';
import { randomUUID } from 'node:crypto';
import { bearer, newAccount, newKey, signInWeb, startHarness, type Harness } from '../../../../test/support/harness';

/**
 * Spec: Limits rule 4 (an Idempotency-Key is scoped to the credential's user and the route) and
 * Authentication 4 (a credential never grants more than its caller holds). All of a person's
 * credentials (their keys, the agents they approved, their web session) share one key scope, and
 * a replay runs no checks: so a replay must never hand back a secret shown once. Otherwise a
 * narrow key that learns (or guesses, when a client derives its keys) the Idempotency-Key of a
 * broader credential's agent registration gets that agent's token, with scopes it does not hold.
 */
let h: Harness;
beforeAll(async () => { h = await startHarness(); });
afterAll(async () => { await h.close(); });

describe('POST /identities with an Idempotency-Key', () => {
  test('the token is in the first answer only; a replay (by another credential of the same person) answers without it', async () => {
    const a = await newAccount(h);
    const { agent, csrf } = await signInWeb(h, a.owner.email);
    const key = randomUUID();
    const body = { name: 'deploy-bot', scopes: ['webhooks:manage', 'credentials:manage', 'identities:manage'] };
    const first = await agent.post(`/accounts/${a.accountId}/identities`).set('X-CSRF-Token', csrf).set('Idempotency-Key', key).send(body);
    expect(first.status).toBe(201);
    expect(first.body.token).toEqual(expect.any(String));

    // The same person's narrow key (no webhooks:manage), replaying the same request.
    const narrow = await newKey(h, a.accountId, a.owner.email, ['identities:manage']);
    const replay = await request(h.api).post(`/accounts/${a.accountId}/identities`).set(bearer(narrow)).set('Idempotency-Key', key).send(body);
    expect(replay.status).toBe(201);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.body).not.toHaveProperty('token');
    expect(JSON.stringify(replay.body)).not.toContain(first.body.token);
    expect(replay.body).toMatchObject({ id: first.body.id, credential_id: first.body.credential_id });
    // The session that registered it still gets it back on its own replay (a lost answer is recoverable).
    const mine = await agent.post(`/accounts/${a.accountId}/identities`).set('X-CSRF-Token', csrf).set('Idempotency-Key', key).send(body);
    expect(mine.headers['idempotent-replayed']).toBe('true');
    expect(mine.body.token).toBe(first.body.token);
    expect(mine.body).not.toHaveProperty('$principal');
  });
});
