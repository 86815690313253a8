import request from 'supertest';
import { bearer, newAccount, newAgent, newKey, startHarness, type Harness } from '../../../../test/support/harness';

let h: Harness;
beforeAll(async () => { h = await startHarness(); });
afterAll(async () => { await h.close(); });

async function setup(agents: number) {
  const a = await newAccount(h);
  const key = await newKey(h, a.accountId, a.owner.email, ['identities:manage', 'audit:read']);
  for (let i = 0; i < agents; i++) await newAgent(h, a.accountId, a.owner.email, []);
  return { a, key };
}

describe('lists: ?limit= and ?cursor=, { data, next_cursor }', () => {
  test('pages through every identity once, ending with next_cursor null', async () => {
    const { a, key } = await setup(6);
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res: request.Response = await request(h.api)
        .get(`/accounts/${a.accountId}/identities`)
        .query(cursor ? { limit: 2, cursor } : { limit: 2 })
        .set(bearer(key));
      expect(res.status).toBe(200);
      expect(res.body.data.length).toBeLessThanOrEqual(2);
      seen.push(...res.body.data.map((i: { id: string }) => i.id));
      cursor = res.body.next_cursor;
      pages++;
    } while (cursor);
    expect(seen).toHaveLength(7); // the owner and six agents
    expect(new Set(seen).size).toBe(7);
    expect(pages).toBe(4);
  });

  test('default limit 50, limit outside 1..200 → 400 invalid_request naming limit', async () => {
    const { a, key } = await setup(0);
    const ok = await request(h.api).get(`/accounts/${a.accountId}/identities`).set(bearer(key));
    expect(ok.body).toEqual({ data: [expect.any(Object)], next_cursor: null });
    for (const limit of ['0', '201', 'abc', '-1']) {
      const res = await request(h.api).get(`/accounts/${a.accountId}/identities?limit=${limit}`).set(bearer(key));
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ code: 'invalid_request', field: 'limit' });
    }
  });

  test('keyset paging: rows inserted while paging are neither skipped nor repeated', async () => {
    const { a, key } = await setup(5);
    const first = await request(h.api).get(`/accounts/${a.accountId}/identities?limit=3`).set(bearer(key));
    const originals = new Set<string>();
    const seen: string[] = first.body.data.map((i: { id: string }) => i.id);
    // Insert more while paging.
    const added = [await newAgent(h, a.accountId, a.owner.email, []), await newAgent(h, a.accountId, a.owner.email, [])];
    let cursor = first.body.next_cursor;
    while (cursor) {
      const res = await request(h.api).get(`/accounts/${a.accountId}/identities`).query({ limit: 3, cursor }).set(bearer(key));
      seen.push(...res.body.data.map((i: { id: string }) => i.id));
      cursor = res.body.next_cursor;
    }
    const all = await request(h.api).get(`/accounts/${a.accountId}/identities?limit=200`).set(bearer(key));
    for (const i of all.body.data) originals.add(i.id);
    expect(new Set(seen).size).toBe(seen.length); // nothing repeated
    expect(seen.sort()).toEqual([...originals].sort()); // nothing skipped
    expect(seen).toEqual(expect.arrayContaining(added.map((x) => x.identity.id)));
  });
});

describe('cursors: malformed, expired or foreign → 400 invalid_cursor', () => {
  async function firstCursor() {
    const { a, key } = await setup(3);
    const res = await request(h.api).get(`/accounts/${a.accountId}/identities?limit=1`).set(bearer(key));
    return { a, key, cursor: res.body.next_cursor as string };
  }

  test('tampered', async () => {
    const { a, key, cursor } = await firstCursor();
    const [payload, sig] = cursor.split('.');
    const body = JSON.parse(Buffer.from(payload, 'base64url').toString());
    body.k = [0];
    const forged = `${Buffer.from(JSON.stringify(body)).toString('base64url')}.${sig}`;
    for (const bad of [forged, 'garbage', `${payload}.`, `${cursor}x`]) {
      const res = await request(h.api).get(`/accounts/${a.accountId}/identities`).query({ cursor: bad }).set(bearer(key));
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('invalid_cursor');
    }
  });

  test('expired after 24 hours', async () => {
    const { a, key, cursor } = await firstCursor();
    const fresh = await request(h.api).get(`/accounts/${a.accountId}/identities`).query({ cursor }).set(bearer(key));
    expect(fresh.status).toBe(200);
    h.clock.advance(24 * 3600 * 1000 + 1000);
    try {
      const res = await request(h.api).get(`/accounts/${a.accountId}/identities`).query({ cursor }).set(bearer(key));
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('invalid_cursor');
    } finally {
      h.clock.reset();
    }
  });

  test("another caller's cursor (another key of the same person)", async () => {
    const { a, cursor } = await firstCursor();
    const otherKey = await newKey(h, a.accountId, a.owner.email, ['identities:manage', 'audit:read']);
    const foreign = await request(h.api).get(`/accounts/${a.accountId}/identities`).query({ cursor }).set(bearer(otherKey));
    expect(foreign.status).toBe(400);
    expect(foreign.body.error.code).toBe('invalid_cursor');
  });

  test('a cursor used on another list', async () => {
    const { a, key, cursor } = await firstCursor();
    const res = await request(h.api).get(`/accounts/${a.accountId}/audit`).query({ cursor }).set(bearer(key));
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('invalid_cursor');
  });
});
