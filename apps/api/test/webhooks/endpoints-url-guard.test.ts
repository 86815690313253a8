import { eq, webhookEndpoints } from '@teamchat/db';
import { startHarness, type Harness } from '../../../../test/support/harness';
import { LOOPBACK_ONLY, hookUrl, register, registered, webhookAccount } from './endpoint-helpers';

/**
 * The URL guard at registration and on every URL change: a refused URL answers 400
 * invalid_request, field url, with a reason. Only 127.0.0.1 is exempt here (WEBHOOK_ALLOWED_HOSTS,
 * as in tests): every other loopback form, and a name resolving to it, is refused.
 */
let h: Harness;
beforeAll(async () => { h = await startHarness(LOOPBACK_ONLY); });
afterAll(async () => { await h.close(); });

const REFUSED: Array<[string, string, string]> = [
  ['plain http', 'http://127.0.0.1/hook', 'not_https'],
  ['plain http to a public name', 'http://example.com/hook', 'not_https'],
  ['not a URL', 'not a url', 'invalid_url'],
  ['credentials in the URL', 'https://user:pw@127.0.0.1/hook', 'invalid_url'],
  ['loopback (another address)', 'https://127.0.0.2/hook', 'private_address'],
  ['loopback IPv6', 'https://[::1]/hook', 'private_address'],
  ['IPv4-mapped loopback', 'https://[::ffff:127.0.0.1]/hook', 'private_address'],
  ['IPv4-compatible loopback', 'https://[::127.0.0.1]/hook', 'private_address'],
  ['IPv4-compatible cloud metadata address', 'https://[::a9fe:a9fe]/hook', 'private_address'],
  ['loopback behind ::ffff:ffff:0:0/96 (outside 2000::/3)', 'https://[::ffff:ffff:7f00:1]/hook', 'private_address'],
  ['IPv4-translated loopback', 'https://[::ffff:0:7f00:1]/hook', 'private_address'],
  ['6to4 of a private IPv4', 'https://[2002:a00:1::1]/hook', 'private_address'],
  ['IPv6 documentation', 'https://[2001:db8::1]/hook', 'private_address'],
  ['a name resolving to 127.0.0.1 (localhost, not exempt)', 'https://localhost/hook', 'private_address'],
  ['private 10/8', 'https://10.0.0.1/hook', 'private_address'],
  ['private 172.16/12', 'https://172.16.5.4/hook', 'private_address'],
  ['private 192.168/16', 'https://192.168.1.1/hook', 'private_address'],
  ['link-local', 'https://169.254.10.10/hook', 'private_address'],
  ['cloud metadata address', 'https://169.254.169.254/latest/meta-data/', 'private_address'],
  ['IPv6 link-local', 'https://[fe80::1]/hook', 'private_address'],
  ['IPv6 unique-local', 'https://[fd00::1]/hook', 'private_address'],
  ['CGNAT', 'https://100.64.0.1/hook', 'private_address'],
  ['unspecified', 'https://0.0.0.0/hook', 'private_address'],
  ['multicast', 'https://224.0.0.1/hook', 'private_address'],
  ['a name that does not resolve', 'https://no-such-host.invalid/hook', 'unresolvable'],
];

describe('URL guard at registration (spec: public https only; private and link-local refused)', () => {
  test.each(REFUSED)('%s → 400 invalid_request, field url, reason', async (_what, url, reason) => {
    const a = await webhookAccount(h);
    for (const client of [a.web, a.key]) {
      const res = await register(client, { url });
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ code: 'invalid_request', field: 'url', reason });
    }
    expect(await h.deps.database.db.select().from(webhookEndpoints).where(eq(webhookEndpoints.accountId, a.accountId))).toHaveLength(0);
  });

  test('the exempt loopback host is accepted (local development and tests only)', async () => {
    const a = await webhookAccount(h);
    expect((await register(a.web, { url: await hookUrl() })).status).toBe(201);
  });
});

describe('URL guard on every URL change (PATCH)', () => {
  test('a refused new URL → 400 field url with its reason; the endpoint keeps its URL and state', async () => {
    const a = await webhookAccount(h);
    const ep = await registered(a.web);
    for (const [url, reason] of [['https://169.254.169.254/', 'private_address'], ['https://localhost:8443/x', 'private_address'], ['http://127.0.0.1/', 'not_https']]) {
      for (const client of [a.web, a.key]) {
        const res = await client.patch(`/webhooks/${ep.id}`, { url });
        expect(res.status).toBe(400);
        expect(res.body.error).toMatchObject({ code: 'invalid_request', field: 'url', reason });
      }
    }
    const now = await a.web.get(`/webhooks/${ep.id}`);
    expect(now.body).toMatchObject({ url: ep.url, enabled: true, version: 1 });
  });
});
