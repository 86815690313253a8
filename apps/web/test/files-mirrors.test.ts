import fs from 'node:fs';
import { randomBytes } from 'node:crypto';
import request from 'supertest';
import type { Page } from 'playwright-core';
import { setAccountState, type AccountState } from '@teamchat/core';
import { addPerson, bearer, newAccount, newKey, signInWeb, type TestAccount } from '../../../test/support/harness';
import type { Receiver } from '../../../test/support/https-receiver';
import { eventually } from '../../../test/support/webhooks';
import { newPage, screenshot, seriousViolations, signIn, startLiveWebEnv, type LiveWebEnv, type WebEnv } from './support/browser';

jest.setTimeout(150_000);

/**
 * Files, channel mirrors and account states in Chromium against the real web host: uploads in
 * three steps with progress, attachments, downloads (docs/api.md "Files"); a mirror set up on
 * the page delivering to a loopback HTTPS receiver (docs/mirrors.md); the account-state banner
 * and a 429's "try again" (spec: Account states, Errors).
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

/** Clicks a download link and answers the downloaded bytes. */
async function download(page: Page, click: () => Promise<void>): Promise<{ bytes: Buffer; name: string }> {
  const [dl] = await Promise.all([page.waitForEvent('download'), click()]);
  const file = await dl.path();
  return { bytes: fs.readFileSync(file), name: dl.suggestedFilename() };
}

test('upload a file on the Files page with a progress bar, download it; attach a file to a message and download it from the message', async () => {
  const a = await newAccount(env.h);
  const key = await newKey(env.h, a.accountId, a.owner.email, []);
  const channel = (await request(env.h.api).post(`/accounts/${a.accountId}/channels`).set(bearer(key)).send({ name: 'design' }).expect(201)).body;
  const { context, page } = await newPage(env);
  await signIn(page, a.owner.email);
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Files', exact: true }).click();
  await page.getByRole('heading', { name: 'Files', level: 1 }).waitFor();
  await page.getByText('No files yet.').waitFor();

  // a slow link, so the progress bar is seen moving (Chromium's own upload throttling)
  const cdp = await context.newCDPSession(page);
  await cdp.send('Network.enable');
  await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: 256 * 1024 });
  const notes = randomBytes(600 * 1024);
  await page.getByLabel('File', { exact: true }).setInputFiles({ name: 'notes.bin', mimeType: 'application/octet-stream', buffer: notes });
  await page.getByRole('button', { name: 'Upload', exact: true }).click();
  const bar = page.getByRole('progressbar', { name: 'Upload progress' });
  await bar.waitFor();
  await eventually(async () => Number(await bar.getAttribute('value').catch(() => '0')) > 0, 20_000, 'bytes sent shown');
  await page.getByRole('status').filter({ hasText: 'Uploaded notes.bin' }).waitFor({ timeout: 30_000 });
  await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: -1 });

  const table = page.getByRole('table');
  const row = table.getByRole('row').filter({ hasText: 'notes.bin' });
  await row.getByText('ready').waitFor();
  await row.getByText('600.0 KB').waitFor();
  const got = await download(page, () => row.getByRole('link', { name: 'notes.bin' }).click());
  expect(got.name).toBe('notes.bin');
  expect(got.bytes.equals(notes)).toBe(true);
  expect(await seriousViolations(page)).toEqual([]);
  await screenshot(page, 'files');

  // attach a new file to a message in the channel
  await page.goto(`/a/${a.accountId}/channels/${channel.id}`);
  await page.getByRole('heading', { name: '#design' }).waitFor();
  const pane = page.getByRole('region', { name: '#design' });
  const sketch = Buffer.from('first sketch of the login screen\n'.repeat(40));
  await pane.getByLabel('Message', { exact: true }).fill('Here is the sketch');
  await pane.getByLabel('Attach file', { exact: true }).setInputFiles({ name: 'sketch.txt', mimeType: 'text/plain', buffer: sketch });
  await pane.getByRole('button', { name: 'Remove sketch.txt' }).waitFor();
  await pane.getByRole('button', { name: 'Send', exact: true }).click();
  const message = pane.getByRole('listitem').filter({ hasText: 'Here is the sketch' });
  const attachments = message.getByRole('list', { name: 'Attachments' });
  await attachments.getByRole('link', { name: 'sketch.txt' }).waitFor();
  await attachments.getByText('1.3 KB').waitFor();
  const fromMessage = await download(page, () => attachments.getByRole('link', { name: 'sketch.txt' }).click());
  expect(fromMessage.bytes.equals(sketch)).toBe(true);
  // a browser's navigation to the content path gets the bytes as a download, never the app
  const web = await signInWeb(env.h, a.owner.email);
  const href = (await attachments.getByRole('link', { name: 'sketch.txt' }).getAttribute('href'))!;
  const nav = await web.agent.get(href).set('Accept', 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8').buffer(true).parse((res, cb) => {
    const chunks: Buffer[] = [];
    res.on('data', (c: Buffer) => chunks.push(c));
    res.on('end', () => cb(null, Buffer.concat(chunks)));
  });
  expect(nav.status).toBe(200);
  expect(nav.headers['content-disposition']).toMatch(/^attachment/);
  expect((nav.body as Buffer).equals(sketch)).toBe(true);
  expect(await seriousViolations(page)).toEqual([]);
  // the API stored the attachment by file id, with its name and size
  const posted = (await request(env.h.api).get(`/accounts/${a.accountId}/channels/${channel.id}/messages`).set(bearer(key)).expect(200)).body.data[0];
  expect(posted.attachments).toEqual([expect.objectContaining({ file_id: expect.stringMatching(/^file_/), name: 'sketch.txt', size: sketch.length })]);

  // both files listed, newest first
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Files', exact: true }).click();
  await table.getByRole('link', { name: 'sketch.txt' }).waitFor();
  expect(await table.locator('tbody tr td:first-child').allTextContents()).toEqual(['sketch.txt', 'notes.bin']);
  await context.close();
});

test('set up a mirror on the Mirrors page: Send test shows its result, a posted message arrives at the receiver, edit, the log, a 429 says when to try again, delete', async () => {
  const path = `/mirror-${Math.random().toString(36).slice(2, 8)}`;
  const key = await newKey(env.h, live.accountId, live.owner.email, []);
  const channelName = `general-${Date.now().toString(36)}`;
  const channel = (await request(env.h.api).post(`/accounts/${live.accountId}/channels`).set(bearer(key)).send({ name: channelName }).expect(201)).body;
  const { context, page } = await newPage(env);
  await signIn(page, live.owner.email);
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Mirrors', exact: true }).click();
  await page.getByRole('heading', { name: 'Mirrors', level: 1 }).waitFor();
  await page.getByRole('button', { name: 'Add mirror' }).click();
  const form = page.getByRole('form', { name: 'Add mirror' });
  await form.getByLabel('URL').fill(rx.url(path));
  await form.getByRole('checkbox', { name: `#${channelName}` }).check();
  await form.getByLabel('Format').selectOption('slack');
  expect(await form.getByRole('checkbox', { name: 'Enabled' }).isChecked()).toBe(true);
  expect(await seriousViolations(page)).toEqual([]);
  await form.getByRole('button', { name: 'Create mirror' }).click();

  const link = page.getByRole('link', { name: rx.url(path) });
  await link.waitFor();
  const row = page.getByRole('row').filter({ has: link });
  await row.getByText('enabled').waitFor();
  await row.getByText(`#${channelName}`).waitFor();
  await link.click();
  await page.getByRole('heading', { name: rx.url(path), level: 1 }).waitFor();

  await page.getByRole('button', { name: 'Send test' }).click();
  await page.getByRole('status').filter({ hasText: 'Test send: delivered, receiver answered 200' }).waitFor();
  const mine = () => rx.received.filter((r) => r.path === path);
  expect(JSON.parse(mine()[0]!.body).text).toContain('Teamchat mirror test');
  // unsigned, without any Authorization header
  expect(mine()[0]!.headers.authorization).toBeUndefined();
  expect(Object.keys(mine()[0]!.headers).filter((h) => h.includes('signature'))).toEqual([]);

  // a message posted in the channel arrives, mentions neutralised
  await request(env.h.api).post(`/accounts/${live.accountId}/channels/${channel.id}/messages`).set(bearer(key)).send({ text: 'deploy done @here' }).expect(201);
  const line = await eventually(async () => mine().find((r) => JSON.parse(r.body).text.includes('deploy done')), 30_000, 'the mirrored message');
  expect(JSON.parse(line.body).text).toMatch(new RegExp(`^\\[#${channelName}\\] .+: deploy done @\u200bhere$`));

  // the log: the test and the message, delivered
  const log = page.getByRole('region', { name: 'Delivery log' });
  await page.reload();
  await log.getByRole('row').filter({ hasText: 'messages' }).getByText('delivered').waitFor();
  await log.getByRole('row').filter({ hasText: 'test' }).getByText('delivered').waitFor();
  expect(await seriousViolations(page)).toEqual([]);
  await page.getByText(`${live.owner.email} on`).waitFor();
  await screenshot(page, 'mirror');
  // the list: its state and health after the two sends
  await page.getByRole('link', { name: '← All mirrors' }).click();
  await row.getByText('100 % of 2 sends').waitFor();
  expect(await seriousViolations(page)).toEqual([]);
  await screenshot(page, 'mirrors');
  await link.click();

  // edit: the format
  await page.getByRole('button', { name: 'Edit' }).click();
  await page.getByRole('form', { name: 'Edit mirror' }).getByLabel('Format').selectOption('discord');
  await page.getByRole('button', { name: 'Save mirror' }).click();
  await page.getByText('Discord', { exact: true }).waitFor();
  await page.getByRole('button', { name: 'Send test' }).click();
  await eventually(async () => mine().find((r) => 'content' in JSON.parse(r.body)), 10_000, 'a discord-format test');

  // a 429 (10 tests a minute per mirror) shows when to try again
  for (let i = 0; i < 12; i += 1) {
    const [answer] = await Promise.all([
      page.waitForResponse((r) => r.request().method() === 'POST' && r.url().endsWith(`/test`)),
      page.getByRole('button', { name: 'Send test' }).click(),
    ]);
    if (answer.status() === 429) break;
    await page.getByRole('button', { name: 'Send test' }).and(page.locator(':enabled')).waitFor();
  }
  await page.getByRole('alert').filter({ hasText: /Try again in \d+ s\./ }).waitFor();

  // delete asks first
  await page.getByRole('button', { name: 'Delete' }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Delete' }).click();
  await page.getByText('No mirrors yet.').waitFor();
  await context.close();
});

test('a member is shown why the Mirrors page is closed to them', async () => {
  const a = await newAccount(env.h);
  const m = await addPerson(env.h, a.accountId, 'member');
  const { context, page } = await newPage(env);
  await signIn(page, m.email);
  await page.goto(`/a/${a.accountId}/mirrors`);
  await page.getByRole('alert').waitFor();
  expect(await page.getByRole('alert').textContent()).toMatch(/\S/);
  await context.close();
});

test('account read_only and suspended are shown as a banner with their meaning; active again clears it', async () => {
  const a = await newAccount(env.h);
  const setState = (state: AccountState) => env.h.deps.database.db.transaction((tx) => setAccountState(tx, a.accountId, state));
  const { context, page } = await newPage(env);
  await signIn(page, a.owner.email);
  const nav = page.getByRole('navigation', { name: 'Main' });
  const banner = page.locator('.banner');
  expect(await banner.count()).toBe(0);

  await setState('read_only');
  await nav.getByRole('link', { name: 'Account', exact: true }).click();
  await banner.filter({ hasText: 'Read-only: every request to this account is refused' }).waitFor();
  // the refused call's own message, where it was made
  await page.getByRole('alert').first().waitFor();
  expect(await seriousViolations(page)).toEqual([]);

  await setState('suspended');
  await nav.getByRole('link', { name: 'Members', exact: true }).click();
  await banner.filter({ hasText: 'Suspended: every request to this account is refused' }).waitFor();

  await setState('active');
  await nav.getByRole('link', { name: 'Webhooks', exact: true }).click();
  await banner.waitFor({ state: 'detached' });
  // signing in while suspended shows it straight away
  await setState('suspended');
  const second = await newPage(env);
  await signIn(second.page, a.owner.email);
  await second.page.locator('.banner').filter({ hasText: 'Suspended' }).waitFor();
  await second.context.close();
  await setState('active');
  await context.close();
});
