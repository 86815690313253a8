import { and, eq, isNull, sql, webhookEndpoints } from '@teamchat/db';
import { newAccount, newKey, startHarness, type Harness } from '../../../../test/support/harness';
import { LOOPBACK_ONLY, hookUrl, keyClient } from '../webhooks/endpoint-helpers';

/**
 * Read-only credentials (docs/api.md "Read-only credentials"): a read-only credential changes
 * nothing, whatever scopes it holds. Every non-GET route under an account answers 403
 * insufficient_scope, reason read_only_credential, before the route runs; GETs still answer.
 */
let h: Harness;
beforeAll(async () => { h = await startHarness(LOOPBACK_ONLY); });
afterAll(async () => { await h.close(); });

const ALL_SCOPES = ['webhooks:manage', 'identities:manage', 'credentials:manage', 'members:manage', 'account:manage', 'audit:read'];

async function setup() {
  const acct = await newAccount(h);
  const full = keyClient(h, acct.accountId, await newKey(h, acct.accountId, acct.owner.email, ALL_SCOPES));
  const ro = keyClient(h, acct.accountId, await newKey(h, acct.accountId, acct.owner.email, ALL_SCOPES, { readOnly: true }));
  const channel = await full.post('/channels', { name: `ro-${Math.random().toString(36).slice(2, 8)}` });
  expect(channel.status).toBe(201);
  const message = await full.post(`/channels/${channel.body.id}/messages`, { text: 'hello' });
  expect(message.status).toBe(201);
  const endpoint = await full.post('/webhooks', { url: await hookUrl(), events: ['message.posted'], channels: 'all' });
  expect(endpoint.status).toBe(201);
  return { acct, full, ro, channelId: channel.body.id as string, ts: message.body.ts as string, endpoint: endpoint.body };
}

const refusedReadOnly = (res: { status: number; body: any }) => {
  expect([res.status, res.body.error?.code, res.body.error?.reason]).toEqual([403, 'insufficient_scope', 'read_only_credential']);
};

describe('a read-only owner key changes nothing, whatever its scopes', () => {
  test('it cannot register, change, test or delete a webhook endpoint; the endpoint is unchanged and no other is made', async () => {
    const s = await setup();
    refusedReadOnly(await s.ro.post('/webhooks', { url: await hookUrl('/ro'), events: ['message.posted'], channels: 'all' }));
    refusedReadOnly(await s.ro.patch(`/webhooks/${s.endpoint.id}`, { url: await hookUrl('/elsewhere'), events: ['mention'] }));
    refusedReadOnly(await s.ro.patch(`/webhooks/${s.endpoint.id}`, { enabled: false }));
    refusedReadOnly(await s.ro.post(`/webhooks/${s.endpoint.id}/test`));
    refusedReadOnly(await s.ro.del(`/webhooks/${s.endpoint.id}`));
    const rows = await h.deps.database.db.select().from(webhookEndpoints)
      .where(and(eq(webhookEndpoints.accountId, s.acct.accountId), isNull(webhookEndpoints.deletedAt)));
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ id: s.endpoint.id, url: s.endpoint.url, version: s.endpoint.version });
  });

  test('it cannot mint an agent (nor a read-only one)', async () => {
    const s = await setup();
    const before = (await s.full.get('/identities')).body.data.length;
    refusedReadOnly(await s.ro.post('/identities', { name: 'reader' }));
    refusedReadOnly(await s.ro.post('/identities', { name: 'writer', scopes: ['webhooks:manage'] }));
    expect((await s.full.get('/identities')).body.data).toHaveLength(before);
  });

  test('it cannot post, edit, react, delete, create a channel, add a member or open a DM', async () => {
    const s = await setup();
    const msg = `/channels/${s.channelId}/messages`;
    refusedReadOnly(await s.ro.post(msg, { text: 'nope' }));
    refusedReadOnly(await s.ro.patch(`${msg}/${s.ts}`, { text: 'changed' }));
    refusedReadOnly(await s.ro.del(`${msg}/${s.ts}`));
    refusedReadOnly(await s.ro.post('/channels', { name: 'nope' }));
    refusedReadOnly(await s.ro.post(`/channels/${s.channelId}/members`, { identity_id: s.acct.owner.identityId }));
    refusedReadOnly(await s.ro.post('/dms', { members: [s.acct.owner.identityId] }));
    const [{ n }] = await h.deps.database.db.execute<{ n: number }>(sql`SELECT count(*)::int AS n FROM messages WHERE channel_id = ${s.channelId}`).then((r) => r.rows);
    expect(n).toBe(1);
  });

  test('GETs still answer: the account, channels, history, endpoints, their deliveries, identities, audit', async () => {
    const s = await setup();
    for (const path of ['', '/channels', `/channels/${s.channelId}/messages`, '/webhooks', `/webhooks/${s.endpoint.id}`, `/webhooks/${s.endpoint.id}/deliveries`, '/identities', '/members', '/audit', '/api-keys']) {
      const res = await s.ro.get(path);
      expect([path, res.status]).toEqual([path, 200]);
    }
  });
});
