import request from 'supertest';
import { bearer, newAccount, newKey, signInWeb, type TestAccount } from '../../../test/support/harness';
import type { Receiver } from '../../../test/support/https-receiver';
import { eventually } from '../../../test/support/webhooks';
import { newPage, signIn, startLiveWebEnv, type LiveWebEnv, type WebEnv } from './support/browser';

jest.setTimeout(120_000);

/**
 * The endpoint pages' states and wording, in Chromium against the real web host (docs/web.md
 * "Pages and their names"): a deleted endpoint, chosen channels by name, rotating with a
 * confirmation and focus kept, the replay job's real result, filters in the history, the test
 * result said once, endpoints sharing a URL, and the form's own checks.
 */
let stack: LiveWebEnv;
let env: WebEnv;
let rx: Receiver;
let live: TestAccount;

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

const pathOf = () => `/ws-${Math.random().toString(36).slice(2, 8)}`;

async function register(accountId: string, email: string, body: Record<string, unknown>) {
  const web = await signInWeb(env.h, email);
  const res = await web.agent.post(`/accounts/${accountId}/webhooks`).set('X-CSRF-Token', web.csrf)
    .send({ events: ['message.posted'], channels: 'all', ...body }).expect(201);
  return { web, endpoint: res.body as { id: string; url: string; secret: string } };
}

test('a deleted endpoint: Back shows only "not found", none of its cached details or actions', async () => {
  const a = await newAccount(env.h);
  const url = rx.url(pathOf());
  const { endpoint } = await register(a.accountId, a.owner.email, { url });
  const { context, page } = await newPage(env);
  await signIn(page, a.owner.email);
  await page.goto(`/a/${a.accountId}/webhooks/${endpoint.id}`);
  await page.getByRole('heading', { name: url, level: 1 }).waitFor();
  await page.getByRole('button', { name: 'Delete' }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Delete' }).click();
  await page.getByRole('heading', { name: 'Webhooks', level: 1 }).waitFor();
  await page.goBack();
  await page.getByRole('alert').filter({ hasText: 'not found' }).waitFor();
  // give a cached copy every chance to show
  await page.waitForTimeout(300);
  expect(await page.getByRole('heading', { name: url }).count()).toBe(0);
  expect(await page.getByText('enabled', { exact: true }).count()).toBe(0);
  for (const name of ['Send test event', 'Disable', 'Rotate secret', 'Delete']) {
    expect(await page.getByRole('button', { name, exact: true }).count()).toBe(0);
  }
  expect(await page.getByRole('region', { name: 'Delivery log' }).count()).toBe(0);
  await context.close();
});

test('chosen channels are shown by name, not by id', async () => {
  const a = await newAccount(env.h);
  const key = await newKey(env.h, a.accountId, a.owner.email, []);
  const random = (await request(env.h.api).post(`/accounts/${a.accountId}/channels`).set(bearer(key)).send({ name: 'random' }).expect(201)).body;
  const { endpoint } = await register(a.accountId, a.owner.email, { url: rx.url(pathOf()), channels: [random.id] });
  const { context, page } = await newPage(env);
  await signIn(page, a.owner.email);
  await page.goto(`/a/${a.accountId}/webhooks/${endpoint.id}`);
  const facts = page.locator('dl.facts');
  await facts.getByText('#random', { exact: true }).waitFor();
  expect(await facts.textContent()).not.toContain(random.id);
  await context.close();
});

test('"Rotate secret" asks first; after the new secret is shown, focus comes back to the page, not <body>', async () => {
  const a = await newAccount(env.h);
  const { web, endpoint } = await register(a.accountId, a.owner.email, { url: rx.url(pathOf()) });
  const rotated = async () =>
    (await web.agent.get(`/accounts/${a.accountId}/webhooks/${endpoint.id}`).expect(200)).body.previous_valid_until !== null;
  const { context, page } = await newPage(env);
  await signIn(page, a.owner.email);
  await page.goto(`/a/${a.accountId}/webhooks/${endpoint.id}`);
  await page.getByRole('button', { name: 'Rotate secret' }).click();
  const dialog = page.getByRole('dialog');
  await dialog.getByRole('heading', { name: /^Rotate the signing secret\?/ }).waitFor();
  expect(await rotated()).toBe(false);
  await dialog.getByRole('button', { name: 'Cancel' }).click();
  await dialog.waitFor({ state: 'hidden' });
  expect(await rotated()).toBe(false);

  await page.getByRole('button', { name: 'Rotate secret' }).click();
  await dialog.getByRole('button', { name: 'Rotate secret' }).click();
  await dialog.getByText('The previous secret keeps signing alongside this one until').waitFor();
  expect(await dialog.getByTestId('secret-value').textContent()).not.toBe(endpoint.secret);
  await dialog.getByRole('button', { name: 'Done' }).click();
  await dialog.waitFor({ state: 'hidden' });
  expect(await rotated()).toBe(true);
  await eventually(async () => (await page.evaluate(() => document.activeElement?.textContent ?? null)) === 'Rotate secret' || null, 5_000, 'focus on Rotate secret');
  await context.close();
});

test('"Reveal secret" disappears once used: focus goes to the page heading, not <body>', async () => {
  const a = await newAccount(env.h);
  const key = await newKey(env.h, a.accountId, a.owner.email, ['webhooks:manage']);
  const url = rx.url(pathOf());
  const reg = await request(env.h.api).post(`/accounts/${a.accountId}/webhooks`).set(bearer(key))
    .send({ url, events: ['message.posted'], channels: 'all' }).expect(201);
  const { context, page } = await newPage(env);
  await signIn(page, a.owner.email);
  await page.goto(`/a/${a.accountId}/webhooks/${reg.body.id}`);
  await page.getByRole('button', { name: 'Reveal secret' }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Done' }).click();
  await page.getByRole('button', { name: 'Reveal secret' }).waitFor({ state: 'detached' });
  await eventually(async () => (await page.evaluate(() => document.activeElement?.tagName ?? null)) === 'H1' || null, 5_000, 'focus on the heading');
  await context.close();
});

test('the test result says the receiver’s answer once', async () => {
  const a = await newAccount(env.h);
  const { endpoint } = await register(a.accountId, a.owner.email, { url: rx.url(pathOf()) });
  rx.fallback = { status: 503 };
  const { context, page } = await newPage(env);
  await signIn(page, a.owner.email);
  await page.goto(`/a/${a.accountId}/webhooks/${endpoint.id}`);
  await page.getByRole('button', { name: 'Send test event' }).click();
  const status = page.getByRole('status').filter({ hasText: 'Test event: failed' });
  await status.waitFor();
  expect(await status.textContent()).toMatch(/^Test event: failed, receiver answered 503 in \d+ ms\.$/);
  await context.close();
});

test('two endpoints with the same URL are told apart in the list', async () => {
  const a = await newAccount(env.h);
  const url = rx.url(pathOf());
  const one = (await register(a.accountId, a.owner.email, { url, events: ['message.posted'] })).endpoint;
  const two = (await register(a.accountId, a.owner.email, { url, events: ['mention'] })).endpoint;
  const { context, page } = await newPage(env);
  await signIn(page, a.owner.email);
  await page.goto(`/a/${a.accountId}/webhooks`);
  const links = page.getByRole('link', { name: url, exact: true });
  await eventually(async () => ((await links.count()) === 2 ? true : null), 10_000, 'two links');
  const cells = page.getByRole('row').filter({ has: links }).locator('td:first-child');
  const texts = await cells.allTextContents();
  expect(new Set(texts).size).toBe(2);
  expect(texts.some((t) => t.includes(one.id) && t.includes('message.posted'))).toBe(true);
  expect(texts.some((t) => t.includes(two.id) && t.includes('mention'))).toBe(true);
  await context.close();
});

test('Add endpoint checks its events and chosen channels itself, in plain words, and clears the note on a change', async () => {
  const a = await newAccount(env.h);
  const { context, page } = await newPage(env);
  await signIn(page, a.owner.email);
  await page.goto(`/a/${a.accountId}/webhooks`);
  await page.getByRole('button', { name: 'Add endpoint' }).click();
  await page.getByLabel('URL').fill(rx.url(pathOf()));
  await page.getByRole('checkbox', { name: 'message.posted', exact: true }).uncheck();
  await page.getByRole('button', { name: 'Create endpoint' }).click();
  const form = page.getByRole('form', { name: 'Add endpoint' });
  await form.getByRole('alert').filter({ hasText: 'Choose at least one event.' }).waitFor();
  expect(await form.getByText('must contain at least').count()).toBe(0);
  await page.getByRole('checkbox', { name: 'mention', exact: true }).check();
  await form.getByRole('alert').waitFor({ state: 'detached' });

  await page.getByRole('radio', { name: 'Chosen channels' }).check();
  await page.getByRole('button', { name: 'Create endpoint' }).click();
  await form.getByRole('alert').filter({ hasText: 'Choose at least one channel' }).waitFor();
  await page.getByRole('radio', { name: 'All channels' }).check();
  await form.getByRole('alert').waitFor({ state: 'detached' });
  const web = await signInWeb(env.h, a.owner.email);
  expect((await web.agent.get(`/accounts/${a.accountId}/webhooks`).expect(200)).body.data).toHaveLength(0);
  await context.close();
});

test('delivery log filters are history entries: Back undoes the last filter, then leaves the filters, staying on the endpoint', async () => {
  const a = await newAccount(env.h);
  const url = rx.url(pathOf());
  const { endpoint } = await register(a.accountId, a.owner.email, { url });
  const { context, page } = await newPage(env);
  await signIn(page, a.owner.email);
  await page.goto(`/a/${a.accountId}/webhooks/${endpoint.id}`);
  const log = page.getByRole('region', { name: 'Delivery log' });
  await log.getByRole('checkbox', { name: 'dead' }).check();
  await page.waitForURL(/status=dead$/);
  await log.getByRole('checkbox', { name: 'failed' }).check();
  await page.waitForURL(/status=dead%2Cfailed$/);
  await log.getByLabel('Event type').selectOption('mention');
  await page.waitForURL(/event_type=mention/);

  await page.goBack();
  await page.waitForURL((u) => u.search === '?status=dead%2Cfailed');
  expect(await log.getByLabel('Event type').inputValue()).toBe('');
  await page.goBack();
  await page.waitForURL((u) => u.search === '?status=dead');
  expect(await log.getByRole('checkbox', { name: 'failed' }).isChecked()).toBe(false);
  await page.goBack();
  await page.waitForURL((u) => u.pathname.endsWith(endpoint.id) && u.search === '');
  await page.getByRole('heading', { name: url, level: 1 }).waitFor();
  expect(await log.getByRole('checkbox', { name: 'dead' }).isChecked()).toBe(false);
  await context.close();
});

test('"Replay failed since…" says what the job reports, in the singular for one delivery', async () => {
  const path = pathOf();
  const key = await newKey(env.h, live.accountId, live.owner.email, ['webhooks:manage']);
  const { web, endpoint } = await register(live.accountId, live.owner.email, { url: rx.url(path) });
  const channel = await request(env.h.api).post(`/accounts/${live.accountId}/channels`).set(bearer(key)).send({ name: `one-${Date.now()}` }).expect(201);
  // every attempt fails until the retries run out (test schedule): the one event ends dead
  rx.fallback = { status: 500 };
  await request(env.h.api).post(`/accounts/${live.accountId}/channels/${channel.body.id}/messages`).set(bearer(key)).send({ text: 'only one' }).expect(201);
  await eventually(async () => {
    const dead = (await web.agent.get(`/accounts/${live.accountId}/webhooks/${endpoint.id}/deliveries?status=dead`).expect(200)).body.data;
    return dead.length === 1 ? true : null;
  }, 30_000, 'one dead delivery');
  rx.fallback = { status: 200 };

  const { context, page } = await newPage(env);
  await signIn(page, live.owner.email);
  await page.goto(`/a/${live.accountId}/webhooks/${endpoint.id}`);
  const log = page.getByRole('region', { name: 'Delivery log' });
  await log.getByRole('button', { name: 'Replay failed since…' }).click();
  const dialog = page.getByRole('dialog');
  await dialog.getByRole('button', { name: 'Replay deliveries' }).waitFor();
  await dialog.getByRole('button', { name: 'Count deliveries' }).click();
  await dialog.getByText('This will replay 1 delivery.').waitFor();
  await dialog.getByRole('button', { name: 'Replay 1 delivery', exact: true }).click();
  await log.getByRole('status').filter({ hasText: 'Replayed 1 delivery: 1 delivered.' }).waitFor({ timeout: 30_000 });
  expect(await page.getByText(/deliveries\b/).filter({ hasText: /\b1 deliveries\b/ }).count()).toBe(0);
  await context.close();
});
