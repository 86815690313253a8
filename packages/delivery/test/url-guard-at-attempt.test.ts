import { eq, webhookEndpoints } from '@teamchat/db';
import { deliverTestEvent } from '../src';
import { newAccount, type Harness } from '../../../test/support/harness';
import { startReceiver, type Receiver } from '../../../test/support/https-receiver';
import { createEndpointRow, deliveriesOf, startWebhookHarness } from '../../../test/support/webhooks';

/**
 * Issue 11 "URL guard ... again before every attempt": an endpoint whose URL (changed in the
 * database, past the registration check) points at a forbidden range is refused before any
 * connection; so is a name that resolves to a private address. Only 127.0.0.1 is exempt here,
 * so `localhost` is judged by what it resolves to.
 */
let h: Harness;
let rx: Receiver;

beforeAll(async () => {
  h = await startWebhookHarness({ webhookAllowedHosts: ['127.0.0.1'] });
  rx = await startReceiver();
});
afterAll(async () => {
  await rx.close();
  await h.close();
});

async function attemptAt(url: string) {
  const a = await newAccount(h);
  const ep = await createEndpointRow(h, { accountId: a.accountId, createdByUserId: a.owner.userId, url: rx.url('/ok').replace('localhost', '127.0.0.1') });
  // The URL changes behind the registration check (as a row edited in the database would).
  await h.deps.database.db.update(webhookEndpoints).set({ url }).where(eq(webhookEndpoints.id, ep.id));
  const before = rx.received.length;
  const result = await deliverTestEvent(h.deps, { accountId: a.accountId, endpointId: ep.id });
  return { result, sent: rx.received.length - before, rows: await deliveriesOf(h, ep.id) };
}

describe('the URL guard runs again before every attempt', () => {
  test('the vetted receiver itself is reached (control)', async () => {
    const { result, sent } = await attemptAt(rx.url('/ok').replace('localhost', '127.0.0.1'));
    expect(result.status).toBe('delivered');
    expect(sent).toBe(1);
  });

  it.each([
    ['loopback', '127.0.0.2'], ['private 10/8', '10.0.0.1'], ['private 172.16/12', '172.16.5.4'], ['private 192.168/16', '192.168.0.10'],
    ['link-local / metadata', '169.254.169.254'], ['CGNAT', '100.64.0.1'], ['unspecified', '0.0.0.0'], ['multicast', '224.0.0.1'],
    ['reserved', '240.0.0.1'], ['broadcast', '255.255.255.255'], ['IPv6 loopback', '[::1]'], ['IPv6 unique-local', '[fd00::1]'],
    ['IPv6 link-local', '[fe80::1]'], ['IPv4-mapped loopback', '[::ffff:127.0.0.1]'], ['NAT64 of a private address', '[64:ff9b::a00:1]'],
  ])('%s (%s) is refused before connecting: failed, nothing sent', async (_name, host) => {
    const { result, sent, rows } = await attemptAt(`https://${host}:${rx.port}/hook`);
    expect(result).toMatchObject({ status: 'failed', response_status: null, latency_ms: null, error: 'url refused: private_address' });
    expect(sent).toBe(0);
    expect(rows[0]).toMatchObject({ status: 'failed', error: 'url refused: private_address' });
  });

  test('a name that resolves to a private address is refused (localhost → 127.0.0.1, not exempt by name)', async () => {
    const { result, sent } = await attemptAt(rx.url('/hook'));
    expect(result).toMatchObject({ status: 'failed', error: 'url refused: private_address' });
    expect(sent).toBe(0);
  });

  test('an http URL is refused', async () => {
    const { result, sent } = await attemptAt(`http://127.0.0.1:${rx.port}/hook`);
    expect(result).toMatchObject({ status: 'failed', error: 'url refused: not_https' });
    expect(sent).toBe(0);
  });
});
