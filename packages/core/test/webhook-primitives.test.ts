import Stripe from 'stripe';
import { Webhook } from 'standardwebhooks';
import { AppError, generateSigningSecret, isPublicAddress, loadConfig, parseDurationList, WARNED_MARKER, signatureHeaders, vetWebhookUrl, RESOLUTION_REUSE_MS, RESOLVE_TIMEOUT_MS } from '../src';

const stripe = new Stripe('sk_test_unused');

describe('webhook signing (spec: Signature; both schemes verify with stock packages)', () => {
  const body = JSON.stringify({ id: 'evt_1', type: 'message.posted', text: 'héllo ✓' });
  const now = Math.floor(Date.now() / 1000);

  it('makes whsec_ secrets of 32 random bytes', () => {
    const s = generateSigningSecret();
    expect(s).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(s.slice(6), 'base64')).toHaveLength(32);
    expect(generateSigningSecret()).not.toBe(s);
  });

  it('X-Service-Signature verifies with Stripe, Standard Webhooks headers with standardwebhooks', () => {
    const secret = generateSigningSecret();
    const h = signatureHeaders({ secrets: [secret], body, eventId: 'evt_1', timestamp: now });
    expect(h['x-service-signature']).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    expect(stripe.webhooks.constructEvent(body, h['x-service-signature'], secret, 300)).toMatchObject({ id: 'evt_1' });
    expect(new Webhook(secret).verify(body, h)).toMatchObject({ id: 'evt_1' });
  });

  it('during rotation carries two signatures, current first, and each secret verifies alone', () => {
    const [current, previous] = [generateSigningSecret(), generateSigningSecret()];
    const h = signatureHeaders({ secrets: [current, previous], body, eventId: 'evt_1', timestamp: now });
    expect(h['x-service-signature'].split(',')).toHaveLength(3);
    for (const s of [current, previous]) {
      expect(stripe.webhooks.constructEvent(body, h['x-service-signature'], s, 300)).toBeTruthy();
      expect(new Webhook(s).verify(body, h)).toBeTruthy();
    }
    expect(() => stripe.webhooks.constructEvent(body, h['x-service-signature'], generateSigningSecret(), 300)).toThrow();
    expect(() => new Webhook(generateSigningSecret()).verify(body, h)).toThrow();
  });

  it('a changed body or a stale timestamp fails verification', () => {
    const secret = generateSigningSecret();
    const h = signatureHeaders({ secrets: [secret], body, eventId: 'evt_1', timestamp: now });
    expect(() => stripe.webhooks.constructEvent(body + ' ', h['x-service-signature'], secret, 300)).toThrow();
    const old = signatureHeaders({ secrets: [secret], body, eventId: 'evt_1', timestamp: now - 600 });
    expect(() => stripe.webhooks.constructEvent(body, old['x-service-signature'], secret, 300)).toThrow();
    expect(() => new Webhook(secret).verify(body, old)).toThrow();
  });
});

describe('webhook URL guard (spec: public https only; each forbidden range)', () => {
  const refused = async (url: string, allowedHosts: string[] = []) => {
    try {
      await vetWebhookUrl(url, { allowedHosts });
    } catch (err) {
      expect(err).toBeInstanceOf(AppError);
      expect((err as AppError).extras.field).toBe('url');
      return (err as AppError).extras.reason;
    }
    return 'accepted';
  };

  it.each([
    '127.0.0.1', '10.1.2.3', '172.16.0.1', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0', '224.0.0.1',
    '255.255.255.255', '192.0.2.1', '198.18.0.1', '240.0.0.1', '::1', '::', 'fe80::1', 'fc00::1', 'fd00:ec2::254', 'ff02::1',
    '::ffff:127.0.0.1', '::ffff:10.0.0.1', '::ffff:169.254.169.254', '64:ff9b::a00:1', '64:ff9b::7f00:1', '2002:7f00:1::1', '2001::1', '2001:db8::1',
    // IPv6 outside global unicast 2000::/3, or a special-purpose block inside it, or an IPv4-embedding form of a non-public IPv4
    '::127.0.0.1', '::a9fe:a9fe', '::ffff:ffff:7f00:1', '::1.1.1.1', '::ffff:0:7f00:1', '::ffff:0:a9fe:a9fe', '2002:a9fe:a9fe::1', '2002:a00:1::1',
    '64:ff9b:1::1', '64:ff9b:1::808:808', '64:ff9b:1:101:1:100::', '3fff::1', '5f00::1', 'fec0::1', '100::1', '2001:4:112::1', '2001:2::1', '4000::1',
  ])('refuses %s', async (addr) => {
    expect(isPublicAddress(addr)).toBe(false);
    const host = addr.includes(':') ? `[${addr}]` : addr;
    expect(await refused(`https://${host}/hook`)).toBe('private_address');
  });

  it.each(['1.1.1.1', '8.8.8.8', '2606:4700:4700::1111', '::ffff:1.1.1.1', '64:ff9b::101:101', '2002:101:101::1', '2a00:1450:4001::1'])('accepts the public address %s', (addr) => {
    expect(isPublicAddress(addr)).toBe(true);
  });

  it('refuses a name that resolves to a private address, non-https, bad URLs and credentials in the URL', async () => {
    expect(await refused('https://localhost/hook')).toBe('private_address');
    expect(await refused('http://1.1.1.1/hook')).toBe('not_https');
    expect(await refused('ftp://example.com/')).toBe('not_https');
    expect(await refused('not a url')).toBe('invalid_url');
    expect(await refused('https://user:pw@1.1.1.1/')).toBe('invalid_url');
    expect(await refused('https://no-such-host.invalid/')).toBe('unresolvable');
  });

  it.each(['0x7f.1', '127.1', '2130706433', '0177.0.0.1', '0x0a.0.0.1', '[::ffff:7f00:1]'])('refuses the loopback or private address spelled %s', async (host) => {
    expect(await refused(`https://${host}/hook`)).toBe('private_address');
  });

  it('vets a name on an answer at most RESOLUTION_REUSE_MS old: concurrent attempts share one lookup, attempts within the window use its answer, a later one resolves again (a rebinding name is refused)', async () => {
    const answers = [[{ address: '1.1.1.1', family: 4 }], [{ address: '10.0.0.7', family: 4 }]];
    let lookups = 0;
    const resolve = async () => {
      const answer = answers[Math.min(lookups, answers.length - 1)];
      lookups += 1;
      await new Promise((r) => setTimeout(r, 5));
      return answer;
    };
    const together = await Promise.all([1, 2, 3].map(() => vetWebhookUrl('https://rebind.example/hook', { allowedHosts: [], resolve })));
    expect(lookups).toBe(1);
    expect(together.map((v) => v.address)).toEqual(['1.1.1.1', '1.1.1.1', '1.1.1.1']);
    expect((await vetWebhookUrl('https://rebind.example/hook', { allowedHosts: [], resolve })).address).toBe('1.1.1.1');
    expect(lookups).toBe(1);
    await new Promise((r) => setTimeout(r, RESOLUTION_REUSE_MS + 20));
    await expect(vetWebhookUrl('https://rebind.example/hook', { allowedHosts: [], resolve })).rejects.toMatchObject({ extras: { reason: 'private_address' } });
    expect(lookups).toBe(2);
  });

  it('a failed lookup is not used again: the next attempt resolves the name anew', async () => {
    let lookups = 0;
    const resolve = async () => {
      lookups += 1;
      if (lookups === 1) throw new Error('ENOTFOUND');
      return [{ address: '1.1.1.1', family: 4 }];
    };
    await expect(vetWebhookUrl('https://flaky.example/hook', { allowedHosts: [], resolve })).rejects.toMatchObject({ extras: { reason: 'unresolvable' } });
    expect((await vetWebhookUrl('https://flaky.example/hook', { allowedHosts: [], resolve })).address).toBe('1.1.1.1');
    expect(lookups).toBe(2);
  });

  it('a lookup without an answer within RESOLVE_TIMEOUT_MS is unresolvable; callers meanwhile share the one lookup, which is used once it answers', async () => {
    let lookups = 0;
    let answer: (a: Array<{ address: string; family: number }>) => void = () => undefined;
    const resolve = () => {
      lookups += 1;
      return new Promise<Array<{ address: string; family: number }>>((r) => (answer = r));
    };
    const started = performance.now();
    const first = vetWebhookUrl('https://slow-dns.example/hook', { allowedHosts: [], resolve });
    await new Promise((r) => setTimeout(r, 200));
    const second = vetWebhookUrl('https://slow-dns.example/hook', { allowedHosts: [], resolve });
    await expect(first).rejects.toMatchObject({ extras: { reason: 'unresolvable' } });
    expect(performance.now() - started).toBeGreaterThanOrEqual(RESOLVE_TIMEOUT_MS - 5);
    await expect(second).rejects.toMatchObject({ extras: { reason: 'unresolvable' } });
    expect(lookups).toBe(1);
    answer([{ address: '1.1.1.1', family: 4 }]);
    await new Promise((r) => setImmediate(r));
    expect((await vetWebhookUrl('https://slow-dns.example/hook', { allowedHosts: [], resolve })).address).toBe('1.1.1.1');
    expect(lookups).toBe(1);
  });

  it('WEBHOOK_ALLOWED_HOSTS exempts a host from the address rule, never from https', async () => {
    const v = await vetWebhookUrl('https://localhost:8443/hook', { allowedHosts: ['localhost'] });
    expect(['127.0.0.1', '::1']).toContain(v.address);
    expect(await refused('http://localhost/hook', ['localhost'])).toBe('not_https');
    expect((await vetWebhookUrl('https://1.1.1.1/x', { allowedHosts: [] })).address).toBe('1.1.1.1');
  });
});

describe('webhook config (WEBHOOK_* variables; README: Configuration)', () => {
  const base = { NODE_ENV: 'test' };
  it('parses the retry schedule in s/m/h/d and defaults to the spec schedule', () => {
    expect(parseDurationList('1s,2m,1h,1d')).toEqual([1000, 120_000, 3_600_000, 86_400_000]);
    const c = loadConfig(base, { secretsKey: 'ab'.repeat(32) });
    expect(c.webhookRetryScheduleMs).toEqual(parseDurationList('1m,5m,30m,2h,6h,12h,24h'));
    expect(c.webhookTimeoutMs).toBe(10_000);
    expect(() => loadConfig({ ...base, WEBHOOK_RETRY_SCHEDULE: '1m,soon' }, { secretsKey: 'ab'.repeat(32) })).toThrow(/soon/);
  });
  it('WEBHOOK_ALLOWED_HOSTS warns at boot and is refused in production', () => {
    const warnings: string[] = [];
    const c = loadConfig({ ...base, WEBHOOK_ALLOWED_HOSTS: 'localhost, 127.0.0.1' }, { secretsKey: 'ab'.repeat(32) }, (m) => warnings.push(m));
    expect(c.webhookAllowedHosts).toEqual(['localhost', '127.0.0.1']);
    expect(warnings.join()).toMatch(/WEBHOOK_ALLOWED_HOSTS/);
    expect(() => loadConfig({ NODE_ENV: 'production', SECRETS_KEY: 'ab'.repeat(32), WEBHOOK_ALLOWED_HOSTS: 'localhost' })).toThrow(/refused/);
  });
  it("npm start's children do not repeat the warnings their parent said (the marker), and still refuse a bad value", () => {
    const warnings: string[] = [];
    loadConfig({ ...base, WEBHOOK_ALLOWED_HOSTS: 'localhost', [WARNED_MARKER]: '1' }, { secretsKey: 'ab'.repeat(32) }, (m) => warnings.push(m));
    expect(warnings).toEqual([]);
    expect(() => loadConfig({ NODE_ENV: 'production', SECRETS_KEY: 'ab'.repeat(32), WEBHOOK_ALLOWED_HOSTS: 'localhost', [WARNED_MARKER]: '1' })).toThrow(/refused/);
  });
});
