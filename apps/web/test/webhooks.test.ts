import request from 'supertest';
import { bearer, newAccount, newKey, signInWeb, type TestAccount } from '../../../test/support/harness';
import type { Receiver } from '../../../test/support/https-receiver';
import { eventually } from '../../../test/support/webhooks';
import { newPage, screenshot, seriousViolations, signIn, startLiveWebEnv, type LiveWebEnv, type WebEnv } from './support/browser';
import { signedWith, v1Count } from './support/signature';

jest.setTimeout(120_000);

/**
 * Webhook journeys in Chromium against the real web host, a real HTTPS receiver on loopback and
 * (for event deliveries) a real worker. Spec: Webhooks, Webhook endpoint enablement, Secret
 * rotation, Delivery transitions (replay).
 */
let env: WebEnv;
let rx: Receiver;
/** the account whose events the worker relays */
let live: TestAccount;

let stack: LiveWebEnv;

beforeAll(async () => {
  stack = await startLiveWebEnv();
  ({ env, rx, live } = stack);
});
afterAll(async () => {
  await stack?.close();
});
beforeEach(() => {
  rx.fallback = { status: 200 };
});

const pathOf = () => `/w-${Math.random().toString(36).slice(2, 8)}`;

test('register a webhook on the Webhooks page, copy its secret once, and verify a real delivery with it', async () => {
  const a = await newAccount(env.h);
  const path = pathOf();
  const { context, page } = await newPage(env);
  await signIn(page, a.owner.email);
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Webhooks', exact: true }).click();
  await page.getByRole('heading', { name: 'Webhooks', level: 1 }).waitFor();
  await page.getByRole('button', { name: 'Add endpoint' }).click();
  await page.getByLabel('URL').fill(rx.url(path));
  await page.getByRole('checkbox', { name: 'mention', exact: true }).check();
  expect(await page.getByRole('radio', { name: 'All channels' }).isChecked()).toBe(true);
  await page.getByLabel('Payload').selectOption('text');
  await page.getByLabel('Authorization header').fill('receiver-token-1');
  expect(await seriousViolations(page)).toEqual([]);
  await screenshot(page, 'webhooks-add-endpoint');
  await page.getByRole('button', { name: 'Create endpoint' }).click();

  const dialog = page.getByRole('dialog');
  await dialog.waitFor();
  await dialog.getByText('will not be shown again').waitFor();
  await dialog.getByRole('button', { name: 'Copy' }).click();
  await dialog.getByText('Copied.').waitFor();
  const secret = await page.evaluate(() => navigator.clipboard.readText());
  expect(secret).toMatch(/^whsec_/);
  expect(await seriousViolations(page)).toEqual([]);
  await screenshot(page, 'webhooks-secret-dialog');
  await page.keyboard.press('Escape');
  await dialog.waitFor({ state: 'hidden' });

  // the list: a link named by the URL, with its state
  const link = page.getByRole('link', { name: rx.url(path) });
  await link.waitFor();
  await link.click();
  await page.getByRole('heading', { name: rx.url(path), level: 1 }).waitFor();
  await page.getByRole('button', { name: 'Send test event' }).click();
  await page.getByRole('status').filter({ hasText: 'Test event: delivered' }).waitFor();
  const got = rx.received.filter((r) => r.path === path);
  expect(got).toHaveLength(1);
  expect(signedWith(secret, got[0]!.body, got[0]!.headers['x-service-signature'] as string)).toBe(true);
  expect(got[0]!.headers.authorization).toBe('Bearer receiver-token-1');
  // the secret is never shown again: not on the endpoint page, not in the API
  expect(await page.content()).not.toContain(secret);
  await context.close();
});

test('enable an endpoint a credential registered: reveal its secret once, then Enable shows the test event’s result', async () => {
  const a = await newAccount(env.h);
  const key = await newKey(env.h, a.accountId, a.owner.email, ['webhooks:manage']);
  const path = pathOf();
  const reg = await request(env.h.api).post(`/accounts/${a.accountId}/webhooks`).set(bearer(key))
    .send({ url: rx.url(path), events: ['message.posted'], channels: 'all' }).expect(201);
  expect(reg.body).toMatchObject({ enabled: false, disabled_reason: 'awaiting_enable', secret_pending_reveal: true });

  const { context, page } = await newPage(env);
  await signIn(page, a.owner.email);
  await page.goto(`/a/${a.accountId}/webhooks`);
  const row = page.getByRole('row').filter({ has: page.getByRole('link', { name: rx.url(path) }) });
  await row.getByText('awaiting_enable').waitFor();
  await row.getByText('an owner or admin must enable it here').waitFor();
  await row.getByRole('link').click();
  await page.getByRole('button', { name: 'Reveal secret' }).click();
  const secret = (await page.getByRole('dialog').getByTestId('secret-value').textContent())!;
  expect(secret).toMatch(/^whsec_/);
  await page.getByRole('dialog').getByRole('button', { name: 'Done' }).click();
  await page.getByRole('button', { name: 'Reveal secret' }).waitFor({ state: 'detached' });

  await page.getByRole('button', { name: 'Enable' }).click();
  await page.getByRole('status').filter({ hasText: 'Test event: delivered, receiver answered 200' }).waitFor();
  await page.getByRole('button', { name: 'Disable' }).waitFor();
  const got = rx.received.filter((r) => r.path === path);
  expect(JSON.parse(got[0]!.body).type).toBe('test');
  expect(signedWith(secret, got[0]!.body, got[0]!.headers['x-service-signature'] as string)).toBe(true);
  await screenshot(page, 'endpoint');
  expect(await seriousViolations(page)).toEqual([]);
  await context.close();
});

test('rotate the secret: the new one is shown once with the old one’s end, and the next delivery carries two signatures', async () => {
  const a = await newAccount(env.h);
  const path = pathOf();
  const web = await signInWeb(env.h, a.owner.email);
  const created = await web.agent.post(`/accounts/${a.accountId}/webhooks`).set('X-CSRF-Token', web.csrf)
    .send({ url: rx.url(path), events: ['message.posted'], channels: 'all' }).expect(201);
  const oldSecret = created.body.secret as string;
  const { context, page } = await newPage(env);
  await signIn(page, a.owner.email);
  await page.goto(`/a/${a.accountId}/webhooks/${created.body.id}`);
  await page.getByRole('button', { name: 'Rotate secret' }).click();
  const dialog = page.getByRole('dialog');
  // it asks first; the confirming button has the same name
  await dialog.getByRole('button', { name: 'Rotate secret' }).click();
  await dialog.getByText('The previous secret keeps signing alongside this one until').waitFor();
  const newSecret = (await dialog.getByTestId('secret-value').textContent())!;
  expect(newSecret).not.toBe(oldSecret);
  await dialog.getByRole('button', { name: 'Done' }).click();
  await page.getByRole('button', { name: 'Send test event' }).click();
  await page.getByRole('status').filter({ hasText: 'Test event: delivered' }).waitFor();
  const last = rx.received.filter((r) => r.path === path).at(-1)!;
  const sig = last.headers['x-service-signature'] as string;
  expect(v1Count(sig)).toBe(2);
  expect(signedWith(newSecret, last.body, sig)).toBe(true);
  expect(signedWith(oldSecret, last.body, sig)).toBe(true);
  await context.close();
});

test('delivery log: filter to dead, replay one, then Replay failed since… and the receiver gets each event id again', async () => {
  const path = pathOf();
  const key = await newKey(env.h, live.accountId, live.owner.email, ['webhooks:manage']);
  const web = await signInWeb(env.h, live.owner.email);
  const ep = await web.agent.post(`/accounts/${live.accountId}/webhooks`).set('X-CSRF-Token', web.csrf)
    .send({ url: rx.url(path), events: ['message.posted'], channels: 'all' }).expect(201);
  const channel = await request(env.h.api).post(`/accounts/${live.accountId}/channels`).set(bearer(key)).send({ name: `log-${Date.now()}` }).expect(201);
  // the receiver fails every attempt: each event's retries run out (test schedule: 3 × 200 ms) and it ends dead
  rx.fallback = { status: 500 };
  for (const text of ['one', 'two', 'three']) {
    await request(env.h.api).post(`/accounts/${live.accountId}/channels/${channel.body.id}/messages`).set(bearer(key)).send({ text }).expect(201);
  }
  const mine = () => rx.received.filter((r) => r.path === path);
  const events = await eventually(async () => {
    const dead = (await web.agent.get(`/accounts/${live.accountId}/webhooks/${ep.body.id}/deliveries?status=dead`).expect(200)).body.data;
    return dead.length === 3 ? dead.map((d: { event_id: string }) => d.event_id) : null;
  }, 30_000, 'three dead deliveries');
  rx.fallback = { status: 200 };
  const before = mine().length;

  const { context, page } = await newPage(env);
  await signIn(page, live.owner.email);
  await page.goto(`/a/${live.accountId}/webhooks/${ep.body.id}`);
  const log = page.getByRole('region', { name: 'Delivery log' });
  await page.getByTestId('chart-totals').waitFor();
  await log.getByRole('checkbox', { name: 'dead' }).check();
  await page.waitForURL(/status=dead/);
  const table = log.getByRole('table');
  for (const h of ['Status', 'Event', 'Attempt', 'Time', 'Latency', 'Next retry']) await table.getByRole('columnheader', { name: h, exact: true }).waitFor();
  await eventually(async () => ((await table.getByRole('row').count()) === 4 ? true : null), 10_000, 'three dead rows');
  expect(await table.getByRole('row').filter({ hasText: 'delivered' }).count()).toBe(0);
  expect(await seriousViolations(page)).toEqual([]);
  await log.getByRole('heading', { name: 'Delivery log' }).evaluate((el) => el.scrollIntoView());
  await screenshot(page, 'delivery-log');

  const first = table.getByRole('row').nth(1);
  const firstEvent = (await first.locator('code').first().textContent())!;
  await first.getByRole('button', { name: 'Details' }).click();
  await page.getByRole('dialog').getByText('Request body, as sent').waitFor();
  expect(await page.getByRole('dialog').locator('pre').nth(1).textContent()).toContain(firstEvent);
  await page.getByRole('dialog').getByRole('button', { name: 'Done' }).click();

  await first.getByRole('button', { name: 'Replay' }).click();
  await page.getByRole('status').filter({ hasText: 'Replayed: delivered.' }).waitFor();
  expect(mine().slice(before).map((r) => JSON.parse(r.body).id)).toEqual([firstEvent]);

  // the two still failed: counted, then replayed by the job
  await log.getByRole('button', { name: 'Replay failed since…' }).click();
  const dialog = page.getByRole('dialog');
  await dialog.getByRole('button', { name: 'Count deliveries' }).click();
  await dialog.getByText('This will replay 2 deliveries.').waitFor();
  await dialog.getByRole('button', { name: 'Replay 2 deliveries' }).click();
  await page.getByText('Replayed 2 deliveries: 2 delivered.').waitFor({ timeout: 30_000 });
  const again = mine().slice(before).map((r) => JSON.parse(r.body).id).sort();
  expect(again).toEqual([...events].sort());

  // the charts, from the stats route: every attempt above in this hour's bar, by outcome; latency p50/p99
  await page.reload();
  const charts = page.getByRole('region', { name: 'Deliveries' });
  const bars = charts.getByTestId('chart-bar');
  const readChart = async () => {
    const counts = (await bars.evaluateAll((els) => els.map((el) => Number(el.getAttribute('data-count'))))).filter((n) => n > 0);
    const totals = (await charts.getByTestId('chart-totals').textContent())!;
    return { bars: await bars.count(), counts, attempts: Number(/(\d+) attempts/.exec(totals)![1]) };
  };
  await charts.getByRole('img', { name: /^Deliveries per hour by outcome, last 24 hours: 3 delivered, [1-9]\d* failed, 3 dead$/ }).waitFor();
  const day = await readChart();
  expect(day.bars).toBe(24);
  expect(day.attempts).toBeGreaterThanOrEqual(3 * 2 + 3);
  expect(day.counts.reduce((x, y) => x + y, 0)).toBe(day.attempts);
  // the delivered part of a bar is drawn (its height is a share of the busiest hour)
  expect(await charts.locator('.seg.ok').evaluateAll((els) => els.some((el) => el.getBoundingClientRect().height > 0))).toBe(true);
  await charts.getByRole('img', { name: /^Latency, last 24 hours: p50 \d+ ms, p99 \d+ ms$/ }).waitFor();
  await charts.getByRole('heading', { name: 'Deliveries' }).evaluate((el) => el.scrollIntoView());
  await screenshot(page, 'endpoint-charts');
  await charts.getByRole('button', { name: '7 days' }).click();
  await charts.getByRole('img', { name: /^Deliveries per hour by outcome, last 7 days: 3 delivered/ }).waitFor();
  const week = await readChart();
  expect(week.bars).toBe(168);
  expect(week.attempts).toBe(day.attempts);

  // the list shows each endpoint's health and state in words: one a credential registered, one turned off
  await request(env.h.api).post(`/accounts/${live.accountId}/webhooks`).set(bearer(key)).send({ url: rx.url(pathOf()), events: ['mention'], channels: 'all' }).expect(201);
  const off = await web.agent.post(`/accounts/${live.accountId}/webhooks`).set('X-CSRF-Token', web.csrf)
    .send({ url: rx.url(pathOf()), events: ['dm.received'], channels: 'all', enabled: false }).expect(201);
  await page.goto(`/a/${live.accountId}/webhooks`);
  await page.getByRole('link', { name: off.body.url }).waitFor();
  await page.getByText('awaiting_enable').waitFor();
  await page.getByText('manual', { exact: true }).waitFor();
  expect(await page.getByRole('row').filter({ has: page.getByRole('link', { name: rx.url(path) }) }).getByText('%').count()).toBe(1);
  expect(await seriousViolations(page)).toEqual([]);
  await screenshot(page, 'webhooks');
  await context.close();
});
