import request from 'supertest';
import { MCP_SESSION_HEADER, authenticateCredential, deriveKey, hmacHex, signMcpSession } from '@teamchat/core';
import { bearer, startHarness, type Harness } from '../../../../test/support/harness';
import { byType, eventsOf, makeChannel, messagingAccount } from '../../../../test/support/messaging';

/**
 * docs/mcp.md 'How tools call the API': the MCP session reaches the API in a way a REST client cannot forge: X-MCP-Session
 * signed with a key derived from SECRETS_KEY and bound to the credential; anything else is ignored.
 */
let h: Harness;
beforeAll(async () => { h = await startHarness(); });
afterAll(async () => { await h.close(); });

const SESSION = { client: 'forged-client', version: '6.6.6' };

async function setup() {
  const acct = await messagingAccount(h);
  const channelId = await makeChannel(acct.ownerApi);
  return { acct, channelId };
}

async function credentialIdOf(h: Harness, accountId: string, key: string): Promise<string> {
  const p = await authenticateCredential(h.deps.database.db, key, new Date());
  if (!p || p.accountId !== accountId) throw new Error('no credential');
  return p.id;
}

const postWith = (accountId: string, key: string, channelId: string, header: string | undefined) => {
  const req = request(h.api).post(`/accounts/${accountId}/channels/${channelId}/messages`).set(bearer(key));
  if (header !== undefined) req.set(MCP_SESSION_HEADER, header);
  return req.send({ text: 'hello' });
};

test('a header signed with the server key for this credential is accepted (so the refusals below are real)', async () => {
  const { acct, channelId } = await setup();
  const cid = await credentialIdOf(h, acct.accountId, acct.ownerApi.key);
  const header = signMcpSession(h.deps.config.secretsKey, { session: SESSION, credentialId: cid, now: h.deps.now() });
  const res = await postWith(acct.accountId, acct.ownerApi.key, channelId, header);
  expect(res.status).toBe(201);
  expect(res.body.session).toEqual(SESSION);
  expect((byType(await eventsOf(h, acct.accountId), 'message.posted')[0].data as { session: unknown }).session).toEqual(SESSION);
});

test.each([
  ['unsigned JSON', () => JSON.stringify(SESSION)],
  ['a wrong signature', (cid: string) => {
    const body = Buffer.from(JSON.stringify({ ...SESSION, cid, iat: Math.floor(Date.now() / 1000) })).toString('base64url');
    return `v1.${body}.${'0'.repeat(64)}`;
  }],
  ['signed with another key', (cid: string) => signMcpSession('cd'.repeat(32), { session: SESSION, credentialId: cid, now: new Date() })],
  ['a signature for another credential (replayed by another caller)', () => signMcpSession('ab'.repeat(32), { session: SESSION, credentialId: 'crd_someoneelse', now: new Date() })],
  ['an expired header (older than 5 minutes)', (cid: string) => signMcpSession('ab'.repeat(32), { session: SESSION, credentialId: cid, now: new Date(Date.now() - 6 * 60_000) })],
  ['a body altered after signing', (cid: string) => {
    const [v, , mac] = signMcpSession('ab'.repeat(32), { session: SESSION, credentialId: cid, now: new Date() }).split('.');
    return `${v}.${Buffer.from(JSON.stringify({ client: 'x', version: 'y', cid, iat: Math.floor(Date.now() / 1000) })).toString('base64url')}.${mac}`;
  }],
])('a REST client sending %s gets session null', async (_what, make) => {
  expect(h.deps.config.secretsKey).toBe('ab'.repeat(32));
  const { acct, channelId } = await setup();
  const cid = await credentialIdOf(h, acct.accountId, acct.ownerApi.key);
  const res = await postWith(acct.accountId, acct.ownerApi.key, channelId, make(cid));
  expect(res.status).toBe(201);
  expect(res.body.session).toBeNull();
  expect((byType(await eventsOf(h, acct.accountId), 'message.posted')[0].data as { session: unknown }).session).toBeNull();
});

test('the derived key is not SECRETS_KEY itself (a header HMACed with the raw key is ignored)', async () => {
  const { acct, channelId } = await setup();
  const cid = await credentialIdOf(h, acct.accountId, acct.ownerApi.key);
  const body = Buffer.from(JSON.stringify({ ...SESSION, cid, iat: Math.floor(Date.now() / 1000) })).toString('base64url');
  const raw = `v1.${body}.${hmacHex(Buffer.from(h.deps.config.secretsKey, 'hex'), `v1.${body}`)}`;
  expect(raw).not.toBe(`v1.${body}.${hmacHex(deriveKey(h.deps.config.secretsKey, 'mcp-session'), `v1.${body}`)}`);
  const res = await postWith(acct.accountId, acct.ownerApi.key, channelId, raw);
  expect(res.body.session).toBeNull();
});
