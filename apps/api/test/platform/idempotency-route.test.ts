import request from 'supertest';
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { bearer, newAccount, newKey, startHarness, type Harness } from '../../../../test/support/harness';

/**
 * Spec: Limits rule 4. "The key is scoped to the credential's user and the route", and the key is
 * a UUID. Express routes a path in another letter case, with a trailing slash, or with
 * percent-encoded characters to the same handler, so those spellings are one route and one
 * scope; a UUID written another way (braces, no hyphens) is refused, not a second key.
 */
let h: Harness;
let server: Server;
beforeAll(async () => {
  h = await startHarness();
  server = createServer(h.api);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
});
afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  await h.close();
});

/**
 * A POST over a real socket, not through supertest: the response check every supertest request
 * gets (test/support/openapi-check.ts) finds the operation by the document's paths with a
 * case-sensitive match, while Express routes any letter case; so a path in other letters would
 * fail that check although the operation that served it is the documented one.
 */
async function postOverSocket(path: string, headers: Record<string, string>, body: unknown) {
  const { port } = server.address() as AddressInfo;
  const res = await fetch(`http://127.0.0.1:${port}${path}`, {
    method: 'POST', headers: { ...headers, 'Content-Type': 'application/json' }, body: JSON.stringify(body),
  });
  return { status: res.status, headers: { 'idempotent-replayed': res.headers.get('idempotent-replayed') ?? undefined }, body: await res.json() };
}

async function channelWithKey() {
  const a = await newAccount(h);
  const key = await newKey(h, a.accountId, a.owner.email, []);
  const ch = await request(h.api).post(`/accounts/${a.accountId}/channels`).set(bearer(key)).send({ name: `idem-${randomUUID().slice(0, 8)}` });
  expect(ch.status).toBe(201);
  return { a, key, channelId: ch.body.id as string };
}

async function messageCount(accountId: string, channelId: string, key: string): Promise<number> {
  const res = await request(h.api).get(`/accounts/${accountId}/channels/${channelId}/messages`).set(bearer(key));
  expect(res.status).toBe(200);
  return res.body.data.length;
}

/** One letter of `id` percent-encoded (`ch_…` → `%63h_…`): the same parameter once decoded. */
const percentEncodedFirst = (id: string) => `%${id.charCodeAt(0).toString(16)}${id.slice(1)}`;

describe('Limits rule 4: the Idempotency-Key scope is the route, however its path is spelt', () => {
  test('a trailing slash, another letter case and a percent-encoded id replay the first post and create one message', async () => {
    const { a, key, channelId } = await channelWithKey();
    const idem = randomUUID();
    const body = { text: 'once only' };
    const canonical = `/accounts/${a.accountId}/channels/${channelId}/messages`;
    const first = await request(h.api).post(canonical).set(bearer(key)).set('Idempotency-Key', idem).send(body);
    expect(first.status).toBe(201);
    expect(first.headers['idempotent-replayed']).toBeUndefined();

    const spellings = [
      `${canonical}/`,
      `/accounts/${a.accountId}/channels/${percentEncodedFirst(channelId)}/messages`,
      `/accounts/${percentEncodedFirst(a.accountId)}/channels/${channelId}/messages`,
      `/ACCOUNTS/${a.accountId}/Channels/${channelId}/MESSAGES`,
      `/Accounts/${a.accountId}/channels/${channelId}/Messages/`,
    ];
    for (const path of spellings) {
      const again = await postOverSocket(path, { ...bearer(key), 'Idempotency-Key': idem }, body);
      expect({ path, status: again.status, replayed: again.headers['idempotent-replayed'] }).toEqual({ path, status: 201, replayed: 'true' });
      expect(again.body).toEqual(first.body);
    }
    expect(await messageCount(a.accountId, channelId, key)).toBe(1);
  });

  test('the same key on another channel is still another route (its own message)', async () => {
    const { a, key, channelId } = await channelWithKey();
    const other = await request(h.api).post(`/accounts/${a.accountId}/channels`).set(bearer(key)).send({ name: `idem-${randomUUID().slice(0, 8)}` });
    const idem = randomUUID();
    const one = await request(h.api).post(`/accounts/${a.accountId}/channels/${channelId}/messages`).set(bearer(key)).set('Idempotency-Key', idem).send({ text: 'x' });
    const two = await request(h.api).post(`/accounts/${a.accountId}/channels/${other.body.id}/messages/`).set(bearer(key)).set('Idempotency-Key', idem).send({ text: 'x' });
    expect([one.status, two.status]).toEqual([201, 201]);
    expect(two.headers['idempotent-replayed']).toBeUndefined();
    expect(await messageCount(a.accountId, channelId, key)).toBe(1);
    expect(await messageCount(a.accountId, other.body.id, key)).toBe(1);
  });

  test('a key in upper case is the same key as in lower case', async () => {
    const { a, key, channelId } = await channelWithKey();
    const idem = randomUUID();
    const url = `/accounts/${a.accountId}/channels/${channelId}/messages`;
    await request(h.api).post(url).set(bearer(key)).set('Idempotency-Key', idem).send({ text: 'case' }).expect(201);
    const again = await request(h.api).post(url).set(bearer(key)).set('Idempotency-Key', idem.toUpperCase()).send({ text: 'case' });
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(await messageCount(a.accountId, channelId, key)).toBe(1);
  });

  test('a UUID not in its canonical 8-4-4-4-12 form (braces, no hyphens, a URN) → 400 invalid_request, nothing created', async () => {
    const { a, key, channelId } = await channelWithKey();
    const idem = randomUUID();
    const url = `/accounts/${a.accountId}/channels/${channelId}/messages`;
    for (const spelling of [`{${idem}}`, idem.replace(/-/g, ''), `urn:uuid:${idem}`]) {
      const res = await request(h.api).post(url).set(bearer(key)).set('Idempotency-Key', spelling).send({ text: 'refused' });
      expect({ spelling, status: res.status }).toEqual({ spelling, status: 400 });
      expect(res.body.error).toMatchObject({ code: 'invalid_request', field: 'Idempotency-Key' });
    }
    expect(await messageCount(a.accountId, channelId, key)).toBe(0);
  });
});
