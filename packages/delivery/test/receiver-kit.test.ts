import Stripe from 'stripe';
import { Webhook } from 'standardwebhooks';
import { generateSigningSecret } from '@teamchat/core';
import { verifyDelivery, verifyDeliveryDetailed, WebhookVerificationError, type MessagePostedEvent, type WebhookEvent } from '@teamchat/client';
import { startDeliveryEngine, type DeliveryEngine } from '../src';
import type { Harness } from '../../../test/support/harness';
import { startReceiver, type Receiver } from '../../../test/support/https-receiver';
import { makeChannel, messagingAccount, post } from '../../../test/support/messaging';
import { createEndpointRow, eventually, startWebhookHarness } from '../../../test/support/webhooks';

/**
 * The receiver kit (`@teamchat/client`, docs/webhooks.md "Verifying a delivery") against real
 * deliveries: the worker signs and POSTs to a loopback HTTPS receiver, and the kit, Stripe's
 * verifier and the standardwebhooks package all accept what arrived, with both secrets during
 * a rotation, and refuse it with the wrong secret or a changed body.
 */
const stripe = new Stripe('sk_test_unused');
let h: Harness;
let rx: Receiver;
let worker: DeliveryEngine;
const accountIds: string[] = [];

beforeAll(async () => {
  h = await startWebhookHarness();
  rx = await startReceiver();
  rx.fallback = { status: 200 };
  worker = startDeliveryEngine(h.deps, { accountIds, maintenanceIntervalMs: 300 });
});
afterAll(async () => {
  await worker.close();
  await rx.close();
  await h.close();
});

async function deliveryOf(opts: { previousSecret?: string } = {}) {
  const a = await messagingAccount(h);
  accountIds.push(a.accountId);
  const ch = await makeChannel(a.ownerApi);
  const path = `/kit-${Math.random().toString(36).slice(2, 8)}`;
  const ep = await createEndpointRow(h, {
    accountId: a.accountId, createdByUserId: a.owner.userId, url: rx.url(path), events: ['message.posted'],
    previousSecret: opts.previousSecret, previousValidUntil: opts.previousSecret ? new Date(Date.now() + 3600_000) : undefined,
  });
  const posted = await post(a.ownerApi, ch, { text: 'verify me' });
  const [req] = await eventually(async () => {
    const mine = rx.received.filter((r) => r.path === path);
    return mine.length ? mine : null;
  }, 15_000, 'the delivery');
  return { a, ch, ep, req, posted };
}

test('a real delivery verifies with the kit, with stripe and with standardwebhooks, and is typed', async () => {
  const { a, ch, ep, req, posted } = await deliveryOf();
  const event = verifyDelivery({ rawBody: req.body, headers: req.headers, secrets: ep.secret });
  expect(event.type).toBe('message.posted');
  const typed = event as MessagePostedEvent;
  expect(typed).toMatchObject({ account_id: a.accountId, channel: { id: ch, kind: 'channel' }, ts: posted.ts, broadcast: false });
  expect(typed.id).toBe(req.headers['webhook-id']);
  // each scheme on its own
  const { 'x-service-signature': ours, ...rest } = req.headers;
  expect(verifyDeliveryDetailed({ rawBody: Buffer.from(req.body), headers: { 'x-service-signature': ours }, secrets: ep.secret }).scheme).toBe('x-service-signature');
  expect(verifyDeliveryDetailed({ rawBody: req.body, headers: rest, secrets: ep.secret }).scheme).toBe('standard-webhooks');
  // the stock verifiers agree on the same bytes
  expect(stripe.webhooks.constructEvent(req.body, ours as string, ep.secret, 300)).toMatchObject({ id: typed.id });
  expect(new Webhook(ep.secret).verify(req.body, req.headers as Record<string, string>)).toMatchObject({ id: typed.id });
});

test('during a rotation both secrets verify it; a wrong secret or a changed body is refused with its reason', async () => {
  const previous = generateSigningSecret();
  const { ep, req } = await deliveryOf({ previousSecret: previous });
  for (const secrets of [[ep.secret], [previous], [previous, ep.secret]]) {
    const event: WebhookEvent = verifyDelivery({ rawBody: req.body, headers: req.headers, secrets });
    expect(event.id).toBe(req.headers['webhook-id']);
    expect(new Webhook(secrets[0]).verify(req.body, req.headers as Record<string, string>)).toBeTruthy();
  }
  const refusal = (fn: () => unknown) => {
    try {
      fn();
      return null;
    } catch (err) {
      return err instanceof WebhookVerificationError ? err.reason : 'other';
    }
  };
  expect(refusal(() => verifyDelivery({ rawBody: req.body, headers: req.headers, secrets: generateSigningSecret() }))).toBe('bad_signature');
  expect(refusal(() => verifyDelivery({ rawBody: `${req.body} `, headers: req.headers, secrets: ep.secret }))).toBe('bad_signature');
  expect(refusal(() => verifyDelivery({ rawBody: req.body, headers: req.headers, secrets: ep.secret, now: new Date(Date.now() + 600_000) }))).toBe('stale_timestamp');
});
