import express from 'express';
import request from 'supertest';
import { eq, users } from '@teamchat/db';
import { ERROR_STATUS } from '@teamchat/core';
import { errorHandler } from '../../src/http/error-handler';
import { requestContext } from '../../src/http/request-id';
import { bearer, newAccount, newKey, startHarness, type Harness } from '../../../../test/support/harness';

let h: Harness;
beforeAll(async () => { h = await startHarness(); });
afterAll(async () => { await h.close(); });

async function setup() {
  const a = await newAccount(h);
  const key = await newKey(h, a.accountId, a.owner.email, ['identities:manage']);
  return { a, key, url: `/accounts/${a.accountId}/identities` };
}

describe('Errors: bad input is 400 invalid_request naming the field, never a 500', () => {
  test('malformed JSON', async () => {
    const { key, url } = await setup();
    const res = await request(h.api).post(url).set(bearer(key)).set('Content-Type', 'application/json').send('{"name": ');
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'invalid_request', field: 'body' });
    expect(res.headers['x-request-id']).toBeTruthy();
  });

  test('wrong types name the field', async () => {
    const { key, url } = await setup();
    const res = await request(h.api).post(url).set(bearer(key)).send({ name: 123 });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'invalid_request', field: 'name' });
    const scopes = await request(h.api).post(url).set(bearer(key)).send({ name: 'x', scopes: 'all' });
    expect(scopes.body.error).toMatchObject({ code: 'invalid_request', field: 'scopes' });
  });

  test('a body that is not an object', async () => {
    const { key, url } = await setup();
    const res = await request(h.api).post(url).set(bearer(key)).set('Content-Type', 'application/json').send('[1,2]');
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('invalid_request');
  });

  test('an oversize body', async () => {
    const { key, url } = await setup();
    const res = await request(h.api).post(url).set(bearer(key)).send({ name: 'x', pad: 'y'.repeat(1_100_000) });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'invalid_request', field: 'body' });
  });

  test('unknown fields are ignored (Versioning rule 2)', async () => {
    const { key, url } = await setup();
    const res = await request(h.api).post(url).set(bearer(key)).send({ name: 'bot', future_field: { x: 1 } });
    expect(res.status).toBe(201);
    expect(res.body.future_field).toBeUndefined();
  });

  test('unknown paths answer 404 not_found in the error shape', async () => {
    const { a, key } = await setup();
    const res = await request(h.api).get(`/accounts/${a.accountId}/nothing-here`).set(bearer(key));
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: expect.objectContaining({ code: 'not_found', message: expect.any(String) }) });
  });
});

describe('Errors: a 5xx is 500 internal with status_url and the request id, never a stack trace', () => {
  test('an unexpected exception', async () => {
    const app = express();
    app.set('deps', h.deps);
    app.use(requestContext('api'));
    app.get('/boom', () => {
      throw new Error('secret internals at /srv/app.ts:12');
    });
    app.use(errorHandler);
    const res = await request(app).get('/boom');
    expect(res.status).toBe(500);
    expect(res.body.error).toMatchObject({ code: 'internal', status_url: 'http://web.test/status', request_id: res.headers['x-request-id'] });
    expect(JSON.stringify(res.body)).not.toMatch(/secret internals|app\.ts|at /);
  });
});

describe('Errors (only the spec\'s codes): a unique-constraint violation that escapes a use case is 400 invalid_request naming the clash, never 409 conflict or 500', () => {
  test('a duplicate insert through Drizzle', async () => {
    const app = express();
    app.set('deps', h.deps);
    app.use(requestContext('api'));
    app.get('/dup', async () => {
      const a = await newAccount(h);
      const [owner] = await h.deps.database.db.select().from(users).where(eq(users.id, a.owner.userId));
      await h.deps.database.db.insert(users).values({ ...owner, id: `${owner.id}x` });
    });
    app.use(errorHandler);
    const res = await request(app).get('/dup');
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'invalid_request', reason: 'email_taken', field: 'email' });
  });

  test('the error map holds only the spec\'s codes: no conflict', () => {
    expect(Object.keys(ERROR_STATUS).sort()).toEqual([
      'budget_exceeded', 'confirmation_required', 'edit_conflict', 'forbidden', 'idempotency_conflict', 'insufficient_scope',
      'internal', 'invalid_cursor', 'invalid_request', 'not_a_member', 'not_found', 'rate_limited', 'read_only', 'stale',
      'suspended', 'unauthorized',
    ]);
  });
});
