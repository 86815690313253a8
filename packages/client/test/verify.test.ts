import { createHmac, randomBytes } from 'node:crypto';
import Stripe from 'stripe';
import { Webhook } from 'standardwebhooks';
import { verifyDelivery, verifyDeliveryDetailed, WebhookVerificationError, type VerificationFailure, type WebhookEvent } from '../src';

/**
 * The receiver kit against hand-made signatures: every refusal reason, rotation, constant-time
 * comparison of every v1, and agreement with the stock `stripe` and `standardwebhooks`
 * verifiers on the same headers (docs/webhooks.md, "Verifying a delivery").
 */
const stripe = new Stripe('sk_test_unused');
const newSecret = () => `whsec_${randomBytes(32).toString('base64')}`;
const body = JSON.stringify({ id: 'evt_abc', type: 'test', account_id: 'acct_x', created_at: '2026-01-01T00:00:00.000Z', endpoint_id: 'wh_x' });

/** The headers the service sends (packages/core/src/webhooks/signing.ts), written again here from the docs. */
function signed(secrets: string[], opts: { t?: number; id?: string; raw?: string } = {}): Record<string, string> {
  const t = opts.t ?? Math.floor(Date.now() / 1000);
  const id = opts.id ?? 'evt_abc';
  const raw = opts.raw ?? body;
  const v1 = secrets.map((s) => `v1=${createHmac('sha256', s).update(`${t}.${raw}`).digest('hex')}`);
  const std = secrets.map((s) => `v1,${createHmac('sha256', Buffer.from(s.slice(6), 'base64')).update(`${id}.${t}.${raw}`).digest('base64')}`);
  return { 'x-service-signature': `t=${t},${v1.join(',')}`, 'webhook-id': id, 'webhook-timestamp': String(t), 'webhook-signature': std.join(' ') };
}

const only = (h: Record<string, string>, ...keys: string[]) => Object.fromEntries(Object.entries(h).filter(([k]) => keys.includes(k)));
const ours = (h: Record<string, string>) => only(h, 'x-service-signature');
const standard = (h: Record<string, string>) => only(h, 'webhook-id', 'webhook-timestamp', 'webhook-signature');

function reasonOf(fn: () => unknown): VerificationFailure {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(WebhookVerificationError);
    return (err as WebhookVerificationError).reason;
  }
  throw new Error('expected a refusal');
}

test('each scheme alone verifies and returns the parsed event; the stock verifiers agree', () => {
  const secret = newSecret();
  const h = signed([secret]);
  const event: WebhookEvent = verifyDelivery({ rawBody: body, headers: ours(h), secrets: secret });
  expect(event).toEqual(JSON.parse(body));
  expect(verifyDeliveryDetailed({ rawBody: Buffer.from(body), headers: standard(h), secrets: [secret] }).scheme).toBe('standard-webhooks');
  expect(verifyDeliveryDetailed({ rawBody: body, headers: h, secrets: [secret] }).scheme).toBe('x-service-signature');
  expect(stripe.webhooks.constructEvent(body, h['x-service-signature'], secret, 300)).toMatchObject({ id: 'evt_abc' });
  expect(new Webhook(secret).verify(body, standard(h))).toMatchObject({ id: 'evt_abc' });
});

test('a Fetch Headers object and node-style mixed-case or array headers are read alike', () => {
  const secret = newSecret();
  const h = signed([secret]);
  expect(verifyDelivery({ rawBody: body, headers: new Headers(h), secrets: secret })).toMatchObject({ id: 'evt_abc' });
  expect(verifyDelivery({ rawBody: body, headers: { 'X-Service-Signature': h['x-service-signature'] }, secrets: secret })).toMatchObject({ id: 'evt_abc' });
  const [t, v1] = h['x-service-signature'].split(',');
  expect(verifyDelivery({ rawBody: body, headers: { 'x-service-signature': [t, v1] }, secrets: secret })).toMatchObject({ id: 'evt_abc' });
});

test('during a rotation: two signatures, each secret alone verifies, in either order given', () => {
  const [current, previous] = [newSecret(), newSecret()];
  const h = signed([current, previous]);
  for (const secrets of [[current], [previous], [previous, current], [newSecret(), previous]]) {
    expect(verifyDelivery({ rawBody: body, headers: ours(h), secrets })).toMatchObject({ id: 'evt_abc' });
    expect(verifyDelivery({ rawBody: body, headers: standard(h), secrets })).toMatchObject({ id: 'evt_abc' });
  }
  // A receiver that already moved to the new secret still accepts a delivery signed only with it.
  expect(verifyDelivery({ rawBody: body, headers: signed([current]), secrets: [previous, current] })).toMatchObject({ id: 'evt_abc' });
});

test('bad_signature: another secret, a changed body, a changed id, a signature of the wrong length', () => {
  const secret = newSecret();
  const h = signed([secret]);
  expect(reasonOf(() => verifyDelivery({ rawBody: body, headers: h, secrets: newSecret() }))).toBe('bad_signature');
  expect(reasonOf(() => verifyDelivery({ rawBody: body.replace('acct_x', 'acct_y'), headers: h, secrets: secret }))).toBe('bad_signature');
  expect(reasonOf(() => verifyDelivery({ rawBody: body, headers: { ...standard(h), 'webhook-id': 'evt_other' }, secrets: secret }))).toBe('bad_signature');
  const t = h['webhook-timestamp'];
  expect(reasonOf(() => verifyDelivery({ rawBody: body, headers: { 'x-service-signature': `t=${t},v1=abcd` }, secrets: secret }))).toBe('bad_signature');
  // the body's bytes, not a re-serialisation: whitespace changes break it
  expect(reasonOf(() => verifyDelivery({ rawBody: JSON.stringify(JSON.parse(body), null, 1), headers: h, secrets: secret }))).toBe('bad_signature');
});

test('stale_timestamp: genuine but older (or newer) than the tolerance; 5 minutes by default', () => {
  const secret = newSecret();
  const now = Math.floor(Date.now() / 1000);
  const old = signed([secret], { t: now - 301 });
  expect(reasonOf(() => verifyDelivery({ rawBody: body, headers: ours(old), secrets: secret }))).toBe('stale_timestamp');
  expect(reasonOf(() => verifyDelivery({ rawBody: body, headers: standard(old), secrets: secret }))).toBe('stale_timestamp');
  expect(reasonOf(() => verifyDelivery({ rawBody: body, headers: signed([secret], { t: now + 400 }), secrets: secret }))).toBe('stale_timestamp');
  expect(verifyDelivery({ rawBody: body, headers: ours(signed([secret], { t: now - 290 })), secrets: secret })).toBeTruthy();
  expect(verifyDelivery({ rawBody: body, headers: old, secrets: secret, toleranceSeconds: 600 })).toBeTruthy();
  expect(reasonOf(() => verifyDelivery({ rawBody: body, headers: ours(signed([secret], { t: now - 20 })), secrets: secret, toleranceSeconds: 10 }))).toBe('stale_timestamp');
  // the stock verifier refuses the same one
  expect(() => stripe.webhooks.constructEvent(body, old['x-service-signature'], secret, 300)).toThrow(/tolerance/i);
});

test('malformed_header, no_signature, malformed_body, no_secret', () => {
  const secret = newSecret();
  const h = signed([secret]);
  for (const value of ['garbage', 'v1=00', 't=abc,v1=00', 't=1,t=2,v1=00', `t=${h['webhook-timestamp']}`]) {
    expect(reasonOf(() => verifyDelivery({ rawBody: body, headers: { 'x-service-signature': value }, secrets: secret }))).toBe('malformed_header');
  }
  expect(reasonOf(() => verifyDelivery({ rawBody: body, headers: { ...standard(h), 'webhook-id': undefined }, secrets: secret }))).toBe('malformed_header');
  expect(reasonOf(() => verifyDelivery({ rawBody: body, headers: { ...standard(h), 'webhook-timestamp': 'soon' }, secrets: secret }))).toBe('malformed_header');
  expect(reasonOf(() => verifyDelivery({ rawBody: body, headers: { ...standard(h), 'webhook-signature': 'nocomma' }, secrets: secret }))).toBe('malformed_header');
  expect(reasonOf(() => verifyDelivery({ rawBody: body, headers: { 'content-type': 'application/json' }, secrets: secret }))).toBe('no_signature');
  const notJson = 'not json';
  expect(reasonOf(() => verifyDelivery({ rawBody: notJson, headers: signed([secret], { raw: notJson }), secrets: secret }))).toBe('malformed_body');
  expect(reasonOf(() => verifyDelivery({ rawBody: body, headers: h, secrets: [] }))).toBe('no_secret');
  // the error names its reason in the message too, and is an Error
  const err = (() => { try { verifyDelivery({ rawBody: body, headers: {}, secrets: secret }); } catch (e) { return e as Error; } })();
  expect(err).toBeInstanceOf(Error);
  expect(err?.message).toMatch(/no X-Service-Signature/);
});

test('when both schemes are present, one verifying is enough; the first scheme’s failure is reported otherwise', () => {
  const secret = newSecret();
  const h = signed([secret]);
  expect(verifyDelivery({ rawBody: body, headers: { ...h, 'x-service-signature': 'garbage' }, secrets: secret })).toMatchObject({ id: 'evt_abc' });
  expect(reasonOf(() => verifyDelivery({ rawBody: body, headers: { ...h, 'x-service-signature': 'garbage', 'webhook-signature': 'v1,AAAA' }, secrets: secret }))).toBe('malformed_header');
});

test('every v1 is compared: a forged first signature does not hide a genuine second one, and vice versa', () => {
  const secret = newSecret();
  const h = signed([secret]);
  const [t, v1] = h['x-service-signature'].split(',');
  const forged = `v1=${'0'.repeat(64)}`;
  expect(verifyDelivery({ rawBody: body, headers: { 'x-service-signature': `${t},${forged},${v1}` }, secrets: secret })).toBeTruthy();
  expect(verifyDelivery({ rawBody: body, headers: { 'x-service-signature': `${t},${v1},${forged}` }, secrets: secret })).toBeTruthy();
  expect(verifyDelivery({ rawBody: body, headers: { ...standard(h), 'webhook-signature': `v1,${Buffer.alloc(32).toString('base64')} ${h['webhook-signature']}` }, secrets: secret })).toBeTruthy();
});
