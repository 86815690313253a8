import request from 'supertest';
import { MAX_VALUES } from '../../src/http/input-guard';
import { bearer, newAccount, newKey, startHarness, type Harness } from '../../../../test/support/harness';

// A request part holds at most MAX_VALUES values (array items and object members at any depth),
// known fields or not: a 1 MB body of 200,000 ignored zeros would otherwise cost the guard, Joi
// and the idempotency hash about a second of the process's one thread (docs/api.md "Hostile input").

let h: Harness;
beforeAll(async () => { h = await startHarness({ limitsEnabled: false }); });
afterAll(async () => { await h.close(); });

describe('Hostile input: values in a body', () => {
  test('up to the limit is read; past it, in an unknown field or as unknown keys, 400 invalid_request naming the body', async () => {
    const a = await newAccount(h);
    const key = await newKey(h, a.accountId, a.owner.email, ['identities:manage']);
    const url = `/accounts/${a.accountId}/identities`;
    const post = (body: object) => request(h.api).post(url).set(bearer(key)).send(body);
    // the body's own two members plus the array's items
    const under = await post({ name: 'bot', pad: new Array(MAX_VALUES - 2).fill(0) });
    expect(under.status).toBe(201);

    const overArray = await post({ name: 'bot2', pad: new Array(200_000).fill(0) });
    expect(overArray.status).toBe(400);
    expect(overArray.body.error).toMatchObject({ code: 'invalid_request', field: 'body', message: `Invalid field body: body holds more than ${MAX_VALUES} values.` });

    const overKeys = await post(Object.fromEntries([['name', 'bot3'], ...Array.from({ length: 50_000 }, (_, i) => [`k${i}`, 0])]));
    expect(overKeys.status).toBe(400);
    expect(overKeys.body.error).toMatchObject({ code: 'invalid_request', field: 'body' });

    const nested = await post({ name: 'bot4', pad: Array.from({ length: 200 }, () => new Array(100).fill('x')) });
    expect(nested.status).toBe(400);
    expect(nested.body.error.field).toBe('body');
  });

  test('a hostile string deep in an array is still named by its path', async () => {
    const a = await newAccount(h);
    const key = await newKey(h, a.accountId, a.owner.email, ['identities:manage']);
    const res = await request(h.api).post(`/accounts/${a.accountId}/identities`).set(bearer(key))
      .send({ name: 'bot', pad: [1, { deep: [null, 'ok', 'bad\u0000'] }] });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'invalid_request', field: 'pad.1.deep.2' });
  });
});
