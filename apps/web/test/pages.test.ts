import request from 'supertest';
import { startWorker, type RunningWorker } from '../../worker/src/worker';
import { addPerson, bearer, newAccount, newKey, signInWeb } from '../../../test/support/harness';
import { eventually } from '../../../test/support/webhooks';
import { newPage, screenshot, seriousViolations, signIn, startWebEnv, type WebEnv } from './support/browser';

jest.setTimeout(150_000);

/** Journeys of the other pages in Chromium, and axe-core on every page of the main navigation. */
let env: WebEnv;
let worker: RunningWorker;

beforeAll(async () => {
  env = await startWebEnv();
  // jobs only (an approved deletion runs as one); no account's events are relayed
  worker = startWorker(env.h.deps, { maintenanceIntervalMs: 60_000, webhooks: { accountIds: [] } });
});
afterAll(async () => {
  await worker?.close();
  await env?.close();
});

test('approve a deletion an API key requested: the approval link opens the Approvals page; Approve runs it', async () => {
  const a = await newAccount(env.h);
  const key = await newKey(env.h, a.accountId, a.owner.email, []);
  const channel = (await request(env.h.api).post(`/accounts/${a.accountId}/channels`).set(bearer(key)).send({ name: 'ops' }).expect(201)).body;
  const msg = (await request(env.h.api).post(`/accounts/${a.accountId}/channels/${channel.id}/messages`).set(bearer(key)).send({ text: 'rotate the prod keys' }).expect(201)).body;
  const refused = await request(env.h.api).delete(`/accounts/${a.accountId}/channels/${channel.id}/messages/${msg.ts}`).set(bearer(key)).expect(403);
  expect(refused.body.error.code).toBe('confirmation_required');
  const link = new URL(refused.body.error.approval_url as string);

  const { context, page } = await newPage(env);
  await signIn(page, a.owner.email);
  // followed in a browser: the web host answers the API path with the app, which shows the approval
  await page.goto(link.pathname);
  await page.getByRole('heading', { name: 'Approvals', level: 1 }).waitFor();
  await page.getByText('rotate the prod keys').waitFor();
  await page.getByText('#ops', { exact: true }).waitFor();
  expect(await seriousViolations(page)).toEqual([]);
  await screenshot(page, 'approvals');
  await page.getByRole('button', { name: 'Approve' }).click();
  await page.getByText('Approved: the step runs in the background.').waitFor();
  await eventually(async () => {
    const r = await request(env.h.api).get(`/accounts/${a.accountId}/channels/${channel.id}/messages`).set(bearer(key)).expect(200);
    return r.body.data.length === 0 ? true : null;
  }, 20_000, 'the message deleted by the approved job');
  await page.getByRole('button', { name: 'Approve' }).waitFor({ state: 'detached' });
  await context.close();
});

test('create and revoke an API key on the API keys page; a member is not offered webhooks:manage', async () => {
  const a = await newAccount(env.h);
  const { context, page } = await newPage(env);
  await signIn(page, a.owner.email);
  await page.getByRole('link', { name: 'API keys', exact: true }).click();
  await page.getByRole('heading', { name: 'API keys', level: 1 }).waitFor();
  await page.getByRole('checkbox', { name: 'audit:read' }).check();
  await page.getByRole('button', { name: 'Create key' }).click();
  const dialog = page.getByRole('dialog');
  const key = (await dialog.getByTestId('secret-value').textContent())!;
  expect(key).toMatch(/^tc_key_/);
  await dialog.getByRole('button', { name: 'Done' }).click();
  await request(env.h.api).get(`/accounts/${a.accountId}/audit`).set(bearer(key)).expect(200);
  const row = page.getByRole('row').filter({ hasText: key.slice(0, 11) });
  await row.getByText('audit:read').waitFor();
  expect(await seriousViolations(page)).toEqual([]);
  await screenshot(page, 'api-keys');
  await row.getByRole('button', { name: 'Revoke' }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Revoke' }).click();
  await row.getByText(/^revoked/).waitFor();
  await request(env.h.api).get(`/accounts/${a.accountId}/audit`).set(bearer(key)).expect(401);
  await context.close();

  const m = await addPerson(env.h, a.accountId, 'member');
  const second = await newPage(env);
  await signIn(second.page, m.email);
  await second.page.goto(`/a/${a.accountId}/api-keys`);
  await second.page.getByRole('checkbox', { name: 'audit:read' }).waitFor();
  expect(await second.page.getByRole('checkbox', { name: 'webhooks:manage' }).count()).toBe(0);
  await second.context.close();
});

test('register an agent on the Agents page: its token is shown once and works on the API host', async () => {
  const a = await newAccount(env.h);
  const { context, page } = await newPage(env);
  await signIn(page, a.owner.email);
  await page.goto(`/a/${a.accountId}/agents`);
  await page.getByLabel('Agent name').fill('release-bot');
  await page.getByRole('checkbox', { name: 'audit:read' }).check();
  await page.getByRole('button', { name: 'Register agent' }).click();
  const token = (await page.getByRole('dialog').getByTestId('secret-value').textContent())!;
  expect(token).toMatch(/^tc_agt_/);
  await page.keyboard.press('Escape');
  await page.getByText('release-bot').waitFor();
  await request(env.h.api).get(`/accounts/${a.accountId}/audit`).set(bearer(token)).expect(200);
  expect(await seriousViolations(page)).toEqual([]);
  await screenshot(page, 'agents');
  await context.close();
});

test('post and read a thread; react; an edit that lost a race shows the edit_conflict and is resolved; delete asks first', async () => {
  const a = await newAccount(env.h);
  const key = await newKey(env.h, a.accountId, a.owner.email, []);
  const { context, page } = await newPage(env);
  await signIn(page, a.owner.email);
  await page.getByLabel('New channel').fill('general');
  await page.getByRole('button', { name: 'Create channel' }).click();
  await page.getByRole('heading', { name: '#general' }).waitFor();
  await page.getByLabel('Message', { exact: true }).fill('Ship it on Friday?');
  await page.getByRole('button', { name: 'Send', exact: true }).click();
  const root = page.getByRole('region', { name: '#general' }).getByRole('listitem').filter({ hasText: 'Ship it on Friday?' });
  await root.waitFor();
  await root.getByRole('link', { name: 'Reply in thread' }).click();
  const thread = page.getByRole('region', { name: 'Thread' });
  await thread.getByLabel('Reply').fill('Thursday is safer.');
  await thread.getByRole('button', { name: 'Send reply' }).click();
  await thread.getByText('Thursday is safer.').waitFor();
  await root.getByRole('link', { name: '1 reply' }).waitFor();
  await root.getByRole('button', { name: 'React thumbsup' }).click();
  await root.getByText(':thumbsup: 1').waitFor();
  expect(await seriousViolations(page)).toEqual([]);
  await screenshot(page, 'channels');

  // someone edits the message after this page read it
  const channelId = page.url().match(/channels\/(ch_[a-z0-9]+)/)![1]!;
  const ts = (await request(env.h.api).get(`/accounts/${a.accountId}/channels/${channelId}/messages`).set(bearer(key)).expect(200)).body.data[0].ts;
  const pane = page.getByRole('region', { name: '#general' });
  await root.getByRole('button', { name: 'Edit' }).click();
  await request(env.h.api).patch(`/accounts/${a.accountId}/channels/${channelId}/messages/${ts}`).set(bearer(key)).send({ text: 'Ship it on Monday?' }).expect(200);
  await pane.getByLabel('Edit message').fill('Ship it on Thursday.');
  await pane.getByRole('button', { name: 'Save' }).click();
  await pane.getByRole('alert').filter({ hasText: 'changed' }).first().waitFor();
  await pane.getByText('Someone changed this message since you opened it').waitFor();
  await pane.getByRole('button', { name: 'Load latest' }).click();
  await pane.getByText('Ship it on Monday?').waitFor();
  await pane.getByRole('button', { name: 'Save' }).click();
  await pane.getByLabel('Edit message').waitFor({ state: 'detached' });
  await pane.getByText('Ship it on Thursday.').waitFor();

  const edited = pane.getByRole('listitem').filter({ hasText: 'Ship it on Thursday.' });
  await edited.getByRole('button', { name: 'Delete' }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Delete' }).click();
  await pane.getByText('Ship it on Thursday.').waitFor({ state: 'detached' });
  await context.close();
});

test('open a DM with a teammate and post in it', async () => {
  const a = await newAccount(env.h);
  const m = await addPerson(env.h, a.accountId, 'member');
  const { context, page } = await newPage(env);
  await signIn(page, a.owner.email);
  await page.getByRole('link', { name: 'Direct messages', exact: true }).click();
  await page.getByLabel('With').selectOption({ label: `${m.email} (person)` });
  await page.getByRole('button', { name: 'Open DM' }).click();
  await page.getByLabel('Message', { exact: true }).fill('hi there');
  await page.getByRole('button', { name: 'Send', exact: true }).click();
  await page.getByText('hi there').waitFor();
  expect(await seriousViolations(page)).toEqual([]);
  await screenshot(page, 'direct-messages');
  await context.close();
  const theirs = await signInWeb(env.h, m.email);
  const dms = (await theirs.agent.get(`/accounts/${a.accountId}/dms`).expect(200)).body.data;
  expect(dms).toHaveLength(1);
});

test('search finds messages of my channels with the match highlighted; a channel I am not in stays out', async () => {
  const a = await newAccount(env.h);
  const key = await newKey(env.h, a.accountId, a.owner.email, []);
  const other = await addPerson(env.h, a.accountId, 'member');
  const otherKey = await newKey(env.h, a.accountId, other.email, []);
  const mine = (await request(env.h.api).post(`/accounts/${a.accountId}/channels`).set(bearer(key)).send({ name: 'launch' }).expect(201)).body;
  const theirs = (await request(env.h.api).post(`/accounts/${a.accountId}/channels`).set(bearer(otherKey)).send({ name: 'secret-plans' }).expect(201)).body;
  await request(env.h.api).post(`/accounts/${a.accountId}/channels/${mine.id}/messages`).set(bearer(key)).send({ text: 'The Rocket launches at noon' }).expect(201);
  await request(env.h.api).post(`/accounts/${a.accountId}/channels/${theirs.id}/messages`).set(bearer(otherKey)).send({ text: 'rocket budget' }).expect(201);
  const { context, page } = await newPage(env);
  await signIn(page, a.owner.email);
  await page.getByRole('link', { name: 'Search', exact: true }).click();
  await page.getByLabel('Search messages').fill('rocket');
  await page.getByRole('button', { name: 'Search', exact: true }).click();
  const results = page.getByRole('list', { name: 'Results' });
  await results.getByText('launches at noon').waitFor();
  expect(await results.locator('mark').allTextContents()).toEqual(['Rocket']);
  expect(await results.getByRole('listitem').count()).toBe(1);
  expect(page.url()).toContain('q=rocket');
  // a phrase, newest first: the API's matching and highlight, not the page's
  await page.getByLabel('Search messages').fill('"launches at"');
  await page.getByRole('button', { name: 'Search', exact: true }).click();
  await page.getByLabel('Sort').selectOption('newest');
  await page.waitForURL(/sort=newest/);
  await eventually(async () => (await results.locator('mark').allTextContents()).join('|') === 'launches at', 10_000, 'the phrase marked');
  expect(await seriousViolations(page)).toEqual([]);
  await screenshot(page, 'search');
  await results.getByRole('link', { name: '#launch' }).click();
  await page.getByRole('heading', { name: '#launch' }).waitFor();
  await context.close();
});

test('every page of the main navigation renders with no serious or critical axe-core violation', async () => {
  const a = await newAccount(env.h);
  const { context, page } = await newPage(env);
  await signIn(page, a.owner.email);
  const pages: Array<[string, string, string]> = [
    ['Channels', 'Channels', 'channels-empty'],
    ['Direct messages', 'Direct messages', 'direct-messages-empty'],
    ['Webhooks', 'Webhooks', 'webhooks-empty'],
    ['Mirrors', 'Mirrors', 'mirrors-empty'],
    ['Files', 'Files', 'files-empty'],
    ['Search', 'Search', 'search'],
    ['API keys', 'API keys', 'api-keys-empty'],
    ['Agents', 'Agents', 'agents-empty'],
    ['Approvals', 'Approvals', 'approvals-empty'],
    ['Audit log', 'Audit log', 'audit-log'],
    ['Account', 'Account', 'account'],
    ['Members', 'Members', 'members'],
  ];
  const nav = page.getByRole('navigation', { name: 'Main' });
  for (const [link, heading, shot] of pages) {
    await nav.getByRole('link', { name: link, exact: true }).click();
    await page.getByRole('heading', { name: heading, level: 1 }).waitFor();
    await page.waitForLoadState('networkidle');
    expect({ page: link, violations: await seriousViolations(page) }).toEqual({ page: link, violations: [] });
    if (['audit-log', 'account', 'members'].includes(shot)) await screenshot(page, shot);
  }
  // the Account page's use, from the usage route
  await nav.getByRole('link', { name: 'Account', exact: true }).click();
  await page.getByRole('meter', { name: `Calls per minute, ${a.owner.email}` }).waitFor();
  // keyboard: the skip link comes first and moves focus to the page
  await page.reload();
  await page.getByRole('heading', { name: 'Account', level: 1 }).waitFor();
  await page.keyboard.press('Tab');
  expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Skip to content');
  await context.close();
});
