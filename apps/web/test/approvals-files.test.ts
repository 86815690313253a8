import request from 'supertest';
import AxeBuilder from '@axe-core/playwright';
import { randomBytes } from 'node:crypto';
import { addPerson, bearer, newAccount, newKey, PASSWORD, signInWeb, UNLIMITED_PLANS } from '../../../test/support/harness';
import { eventually } from '../../../test/support/webhooks';
import { newPage, signIn, startWebEnv, type WebEnv } from './support/browser';

jest.setTimeout(120_000);

/**
 * Approvals offered only to who may decide; the form checks of Mirrors and Files; a cancelled
 * upload; the upload's live region; a session lost under the app; a bad `?next=` (docs/web.md
 * "Pages and their names", "Session in the browser").
 */
let env: WebEnv;
const MiB = 1024 * 1024;

beforeAll(async () => {
  // starter accounts here may upload files of at most 1 MiB (the "too big" message with the plan's limit)
  env = await startWebEnv({ planLimits: { ...UNLIMITED_PLANS, starter: { ...UNLIMITED_PLANS.starter, fileBytes: 1 * MiB } } });
});
afterAll(async () => {
  await env?.close();
});

test('an approval for a channel the member is not in: why they cannot decide, no Approve or Deny; no heading-order violation', async () => {
  const a = await newAccount(env.h);
  const key = await newKey(env.h, a.accountId, a.owner.email, []);
  const channel = (await request(env.h.api).post(`/accounts/${a.accountId}/channels`).set(bearer(key)).send({ name: 'ops' }).expect(201)).body;
  const msg = (await request(env.h.api).post(`/accounts/${a.accountId}/channels/${channel.id}/messages`).set(bearer(key)).send({ text: 'drop the table' }).expect(201)).body;
  const refused = await request(env.h.api).delete(`/accounts/${a.accountId}/channels/${channel.id}/messages/${msg.ts}`).set(bearer(key)).expect(403);
  const link = new URL(refused.body.error.approval_url as string);
  const m = await addPerson(env.h, a.accountId, 'member');

  const { context, page } = await newPage(env);
  await signIn(page, m.email);
  await page.goto(link.pathname);
  await page.getByRole('heading', { name: 'Approvals', level: 1 }).waitFor();
  await page.getByText('a channel you cannot see').waitFor();
  await page.getByText('You cannot approve or deny this').waitFor();
  expect(await page.getByRole('button', { name: 'Approve' }).count()).toBe(0);
  expect(await page.getByRole('button', { name: 'Deny' }).count()).toBe(0);
  const order = await new AxeBuilder({ page }).withRules(['heading-order']).analyze();
  expect(order.violations.map((v) => v.id)).toEqual([]);
  await context.close();

  // the owner, who may decide, is offered both (and the page has no heading-order violation either)
  const owner = await newPage(env);
  await signIn(owner.page, a.owner.email);
  await owner.page.goto(link.pathname);
  await owner.page.getByRole('button', { name: 'Approve' }).waitFor();
  await owner.page.getByRole('button', { name: 'Deny' }).waitFor();
  expect(await owner.page.getByText('You cannot approve or deny this').count()).toBe(0);
  const ownerOrder = await new AxeBuilder({ page: owner.page }).withRules(['heading-order']).analyze();
  expect(ownerOrder.violations.map((v) => v.id)).toEqual([]);
  await owner.context.close();
});

test('Add mirror with no channel: the form says so itself, and the note goes when a channel is ticked', async () => {
  const a = await newAccount(env.h);
  const key = await newKey(env.h, a.accountId, a.owner.email, []);
  await request(env.h.api).post(`/accounts/${a.accountId}/channels`).set(bearer(key)).send({ name: 'general' }).expect(201);
  const { context, page } = await newPage(env);
  await signIn(page, a.owner.email);
  await page.goto(`/a/${a.accountId}/mirrors`);
  await page.getByRole('button', { name: 'Add mirror' }).click();
  const form = page.getByRole('form', { name: 'Add mirror' });
  await form.getByLabel('URL').fill('https://localhost:9/mirror');
  await form.getByRole('button', { name: 'Create mirror' }).click();
  await form.getByRole('alert').filter({ hasText: 'Choose at least one channel to mirror.' }).waitFor();
  expect(await form.getByRole('alert').count()).toBe(1);
  await form.getByRole('checkbox', { name: '#general' }).check();
  await form.getByRole('alert').waitFor({ state: 'detached' });
  const web = await signInWeb(env.h, a.owner.email);
  expect((await web.agent.get(`/accounts/${a.accountId}/mirrors`).expect(200)).body.data).toHaveLength(0);
  await context.close();
});

test('Files: an empty file and a file above the plan’s size are refused in plain words (the limit in MB); a new choice clears the note', async () => {
  const a = await newAccount(env.h, 'starter');
  const { context, page } = await newPage(env);
  await signIn(page, a.owner.email);
  await page.goto(`/a/${a.accountId}/files`);
  const form = page.getByRole('form', { name: 'Upload a file' });
  await form.getByLabel('File', { exact: true }).setInputFiles({ name: 'empty.txt', mimeType: 'text/plain', buffer: Buffer.alloc(0) });
  // the button may be disabled for an empty file: the note is shown at once either way
  if (await form.getByRole('button', { name: 'Upload', exact: true }).isEnabled()) await form.getByRole('button', { name: 'Upload', exact: true }).click();
  await form.getByRole('alert').filter({ hasText: 'empty.txt is empty' }).waitFor();
  expect(await form.getByText('greater than or equal').count()).toBe(0);

  await form.getByLabel('File', { exact: true }).setInputFiles({ name: 'big.bin', mimeType: 'application/octet-stream', buffer: randomBytes(MiB + 512 * 1024) });
  await form.getByRole('alert').waitFor({ state: 'detached' });
  await form.getByRole('button', { name: 'Upload', exact: true }).click();
  const tooBig = form.getByRole('alert').filter({ hasText: 'big.bin is too big' });
  await tooBig.waitFor();
  expect(await tooBig.textContent()).toContain('at most 1 MB');
  expect(await tooBig.textContent()).not.toMatch(/\d{6,} bytes/);
  await form.getByLabel('File', { exact: true }).setInputFiles({ name: 'small.txt', mimeType: 'text/plain', buffer: Buffer.from('hello') });
  await form.getByRole('alert').waitFor({ state: 'detached' });
  await context.close();
});

test('a cancelled upload is abandoned, no pending row left; the progress live region speaks in 10 % steps', async () => {
  const a = await newAccount(env.h);
  const { context, page } = await newPage(env);
  await signIn(page, a.owner.email);
  await page.goto(`/a/${a.accountId}/files`);
  await page.getByText('No files yet.').waitFor();
  const form = page.getByRole('form', { name: 'Upload a file' });
  // every text the live region inside the form takes, in order
  await form.evaluate((el) => {
    const seen: string[] = [];
    (window as unknown as { liveTexts: string[] }).liveTexts = seen;
    new MutationObserver(() => {
      const text = el.querySelector('.meter [role="status"]')?.textContent ?? null;
      if (text !== null && text !== seen.at(-1)) seen.push(text);
    }).observe(el, { subtree: true, childList: true, characterData: true });
  });
  const cdp = await context.newCDPSession(page);
  await cdp.send('Network.enable');
  await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: 256 * 1024 });

  // a whole upload, slowly: the region's texts are a few 10 % steps, not one per progress event
  await form.getByLabel('File', { exact: true }).setInputFiles({ name: 'slow.bin', mimeType: 'application/octet-stream', buffer: randomBytes(700 * 1024) });
  await form.getByRole('button', { name: 'Upload', exact: true }).click();
  await page.getByRole('status').filter({ hasText: 'Uploaded slow.bin' }).waitFor({ timeout: 30_000 });
  const texts = await page.evaluate(() => (window as unknown as { liveTexts: string[] }).liveTexts);
  expect(texts.length).toBeGreaterThan(1);
  expect(texts.length).toBeLessThanOrEqual(11);
  for (const t of texts) expect(t).toMatch(/^Upload progress: (\d0|0|100) %$/);

  // now one cancelled half-way
  await form.getByLabel('File', { exact: true }).setInputFiles({ name: 'cancelled.bin', mimeType: 'application/octet-stream', buffer: randomBytes(900 * 1024) });
  await form.getByRole('button', { name: 'Upload', exact: true }).click();
  const bar = page.getByRole('progressbar', { name: 'Upload progress' });
  await eventually(async () => Number(await bar.getAttribute('value').catch(() => '0')) > 0 || null, 20_000, 'bytes sent');
  await form.getByRole('button', { name: 'Cancel upload' }).click();
  await form.getByRole('status').filter({ hasText: 'Upload cancelled.' }).waitFor();
  await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: -1 });

  // the app abandons the reservation (DELETE /uploads/{fileId}): the API no longer has it
  const web = await signInWeb(env.h, a.owner.email);
  await eventually(async () => {
    const listed = (await web.agent.get(`/accounts/${a.accountId}/files`).expect(200)).body.data as Array<{ name: string }>;
    return !listed.some((f) => f.name === 'cancelled.bin') || null;
  }, 10_000, 'the cancelled reservation to be abandoned');
  await page.reload();
  const table = page.getByRole('table');
  await table.getByRole('row').filter({ hasText: 'slow.bin' }).waitFor();
  expect(await table.getByRole('row').filter({ hasText: 'cancelled.bin' }).count()).toBe(0);
  expect(await table.getByText('pending', { exact: true }).count()).toBe(0);
  await context.close();
});

test('a session that ends under the app: Sign in says so, and signing in again returns to the page', async () => {
  const a = await newAccount(env.h);
  const { context, page } = await newPage(env);
  await signIn(page, a.owner.email);
  await page.goto(`/a/${a.accountId}/webhooks`);
  await page.getByRole('heading', { name: 'Webhooks', level: 1 }).waitFor();
  // the session cookie is gone (expired, or ended on the server): the next call answers 401
  await context.clearCookies();
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Audit log', exact: true }).click();
  await page.getByRole('button', { name: 'Sign in' }).waitFor();
  await page.getByText('You were signed out. Sign in again to continue.').waitFor();
  expect(new URL(page.url()).searchParams.get('next')).toBe(`/a/${a.accountId}/audit`);
  await page.getByLabel('Email').fill(a.owner.email);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Audit log', level: 1 }).waitFor();

  // signed out in another tab: this one says so too
  const other = await context.newPage();
  await other.goto(`/a/${a.accountId}/channels`);
  await other.getByRole('button', { name: 'Sign out' }).click();
  await other.getByRole('button', { name: 'Sign in' }).waitFor();
  await page.getByText('You were signed out. Sign in again to continue.').waitFor();
  // the tab that signed out itself is not told it was signed out
  expect(await other.getByText('You were signed out').count()).toBe(0);
  await context.close();
});

test('a ?next= that is not a page of the app is ignored: signing in lands on the default page, no crash', async () => {
  const a = await newAccount(env.h);
  for (const next of ['/%5Cexample.com', '//example.com/x', 'https%3A%2F%2Fexample.com%2F', '/%5C%5Cexample.com/a/x']) {
    const { context, page } = await newPage(env);
    await page.goto(`/?next=${next}`);
    await page.getByLabel('Email').fill(a.owner.email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Channels', level: 1 }).waitFor();
    expect(new URL(page.url()).origin).toBe(env.baseUrl);
    expect(new URL(page.url()).pathname).toBe(`/a/${a.accountId}/channels`);
    expect(await page.getByText('Unexpected Application Error').count()).toBe(0);
    await context.close();
  }
});
