import { createJob } from '@teamchat/core';
import { newKey, startHarness, type Harness } from '../../../../test/support/harness';
import { LOOPBACK_ONLY, insertDeliveries, keyClient, registered, webhookAccount, type WebhookAccount } from '../webhooks/endpoint-helpers';

/**
 * Cross-account and cross-resource references (spec: Hosts rules 2 and 3; Errors: 404 for what
 * the caller may not know exists). Every id in a path is looked up inside the account of the
 * path, and a child inside its parent: another account's endpoint, delivery or job, or a
 * delivery of another endpoint of the same account, is simply not found, and the answer never
 * names the other tenant.
 */
let h: Harness;
beforeAll(async () => { h = await startHarness(LOOPBACK_ONLY); });
afterAll(async () => { await h.close(); });

async function withEndpoint(a: WebhookAccount) {
  const ep = await registered(a.web);
  const [delivery] = await insertDeliveries(h, { accountId: a.accountId, endpointId: ep.id, rows: [{ status: 'dead' }] });
  return { id: ep.id as string, delivery };
}

const notFound = (res: { status: number; body: any; text: string }, ...ids: string[]) => {
  expect(res.status).toBe(404);
  expect(res.body.error.code).toBe('not_found');
  for (const id of ids) expect(res.text).not.toContain(id);
};

describe('webhook ids of another account, through the caller\'s own account path: 404', () => {
  test('GET, PATCH, DELETE, test, deliveries, replay (credential) and reveal, rotate (web session)', async () => {
    const a = await webhookAccount(h);
    const b = await webhookAccount(h);
    const theirs = await withEndpoint(b);
    notFound(await a.key.get(`/webhooks/${theirs.id}`), b.accountId);
    notFound(await a.key.patch(`/webhooks/${theirs.id}`, { events: ['mention'] }), b.accountId);
    notFound(await a.key.post(`/webhooks/${theirs.id}/test`), b.accountId);
    notFound(await a.key.get(`/webhooks/${theirs.id}/deliveries`), b.accountId);
    notFound(await a.key.post(`/webhooks/${theirs.id}/deliveries/${theirs.delivery}/replay`), b.accountId);
    notFound(await a.web.post(`/webhooks/${theirs.id}/reveal`), b.accountId);
    notFound(await a.web.post(`/webhooks/${theirs.id}/rotate`), b.accountId);
    notFound(await a.key.del(`/webhooks/${theirs.id}`), b.accountId);
    // Still there, untouched, for its own account.
    const still = await b.key.get(`/webhooks/${theirs.id}`);
    expect(still.status).toBe(200);
    expect(still.body).toMatchObject({ events: ['message.posted'], version: 1 });
  });

  test('a delivery of another account replayed through one of the caller\'s endpoints: 404, nothing sent', async () => {
    const a = await webhookAccount(h);
    const b = await webhookAccount(h);
    const mine = await withEndpoint(a);
    const theirs = await withEndpoint(b);
    notFound(await a.key.post(`/webhooks/${mine.id}/deliveries/${theirs.delivery}/replay`), b.accountId, theirs.id);
  });

  test('a delivery of another endpoint of the same account replayed through this one: 404', async () => {
    const a = await webhookAccount(h);
    const one = await withEndpoint(a);
    const other = await withEndpoint(a);
    notFound(await a.key.post(`/webhooks/${one.id}/deliveries/${other.delivery}/replay`), other.id);
  });

  test('a key of one account on another account\'s path: 403 not_a_member, the endpoint never shown', async () => {
    const a = await webhookAccount(h);
    const b = await webhookAccount(h);
    const theirs = await withEndpoint(b);
    const aKey = await newKey(h, a.accountId, a.owner.email, ['webhooks:manage']);
    const res = await keyClient(h, b.accountId, aKey).get(`/webhooks/${theirs.id}`);
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('not_a_member');
    expect(res.text).not.toContain(theirs.id);
  });
});

describe('jobs of another account: 404', () => {
  test('GET /jobs/{jobId} of another account through the caller\'s own path', async () => {
    const a = await webhookAccount(h);
    const b = await webhookAccount(h);
    const job = await h.deps.database.db.transaction((tx) => createJob(tx, { accountId: b.accountId, type: 'message.delete', payload: { approval_id: 'apr_x' } }));
    notFound(await a.web.get(`/jobs/${job.id}`), b.accountId);
    expect((await b.web.get(`/jobs/${job.id}`)).status).toBe(200);
  });

  test('a delivery-log cursor of one endpoint is refused on another endpoint, and for another credential (400 invalid_cursor)', async () => {
    const a = await webhookAccount(h);
    const one = await withEndpoint(a);
    const other = await withEndpoint(a);
    await insertDeliveries(h, { accountId: a.accountId, endpointId: one.id, rows: [{ status: 'delivered' }] });
    const page = await a.key.get(`/webhooks/${one.id}/deliveries?limit=1`).expect(200);
    const cursor = page.body.next_cursor as string;
    expect(cursor).toEqual(expect.any(String));
    await a.key.get(`/webhooks/${one.id}/deliveries?limit=1&cursor=${encodeURIComponent(cursor)}`).expect(200);
    const elsewhere = await a.key.get(`/webhooks/${other.id}/deliveries?cursor=${encodeURIComponent(cursor)}`);
    expect(elsewhere.status).toBe(400);
    expect(elsewhere.body.error.code).toBe('invalid_cursor');
    const otherCaller = await a.web.get(`/webhooks/${one.id}/deliveries?cursor=${encodeURIComponent(cursor)}`);
    expect(otherCaller.body.error.code).toBe('invalid_cursor');
  });
});
