import request from 'supertest';
import type { Page } from 'playwright-core';
import { addPerson, bearer, newAccount, newKey } from '../../../test/support/harness';
import { newPage, seriousViolations, signIn, startWebEnv, type WebEnv } from './support/browser';

jest.setTimeout(150_000);

/**
 * The web app on a phone-sized screen (375×740), by keyboard, and in its wrong states
 * (docs/web.md "Narrow screens", "Keyboard", "Errors and missing things").
 */
let env: WebEnv;
beforeAll(async () => {
  env = await startWebEnv();
});
afterAll(async () => {
  await env?.close();
});

const LONG_URL = `https://example.com/${'a-very-long-path-segment-'.repeat(12)}end`;

async function noSideScroll(page: Page): Promise<{ scrollWidth: number; innerWidth: number }> {
  return page.evaluate(() => ({ scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth }));
}

test('at 375×740 no page scrolls sideways: the navigation folds behind "Menu", long words wrap, wide tables scroll in place', async () => {
  const a = await newAccount(env.h);
  await addPerson(env.h, a.accountId, 'member');
  const key = await newKey(env.h, a.accountId, a.owner.email, []);
  const ch = (await request(env.h.api).post(`/accounts/${a.accountId}/channels`).set(bearer(key)).send({ name: 'general' }).expect(201)).body;
  await request(env.h.api).post(`/accounts/${a.accountId}/channels/${ch.id}/messages`).set(bearer(key)).send({ text: `Read this first: ${LONG_URL} and tell me what you think of the plan` }).expect(201);

  const context = await env.browser.newContext({ baseURL: env.baseUrl, viewport: { width: 375, height: 740 } });
  const page = await context.newPage();
  await signIn(page, a.owner.email);
  expect(await noSideScroll(page)).toEqual({ scrollWidth: 375, innerWidth: 375 });

  const menu = page.getByRole('button', { name: 'Menu' });
  const nav = page.getByRole('navigation', { name: 'Main', includeHidden: true });
  expect(await menu.getAttribute('aria-expanded')).toBe('false');
  expect(await menu.getAttribute('aria-controls')).toBe(await nav.getAttribute('id'));
  expect(await nav.isVisible()).toBe(false);

  // Escape closes the menu and gives focus back to "Menu"
  await menu.click();
  expect(await menu.getAttribute('aria-expanded')).toBe('true');
  await nav.getByRole('link', { name: 'Channels', exact: true }).waitFor();
  expect(await page.evaluate(() => document.activeElement?.closest('nav')?.getAttribute('aria-label'))).toBe('Main');
  await page.keyboard.press('Escape');
  expect(await menu.getAttribute('aria-expanded')).toBe('false');
  expect(await nav.isVisible()).toBe(false);
  expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Menu');

  const pages = ['Channels', 'Direct messages', 'Webhooks', 'Mirrors', 'Files', 'Search', 'API keys', 'Agents', 'Approvals', 'Audit log', 'Account', 'Members'];
  for (const name of pages) {
    await menu.click();
    await nav.getByRole('link', { name, exact: true }).click();
    await page.getByRole('heading', { name, level: 1 }).waitFor();
    await page.waitForLoadState('networkidle');
    // following a link closes the menu; the page gets the full width
    expect({ name, expanded: await menu.getAttribute('aria-expanded') }).toEqual({ name, expanded: 'false' });
    expect({ name, ...(await noSideScroll(page)) }).toEqual({ name, scrollWidth: 375, innerWidth: 375 });
    const main = await page.locator('main').boundingBox();
    expect(main!.width).toBeGreaterThanOrEqual(370);
    expect(await page.title()).toBe(`${name} · teamchat`);
  }

  // a table wider than the screen scrolls inside itself, and is still a table to assistive technology
  await page.getByRole('heading', { name: 'Members', level: 1 }).waitFor();
  await page.getByRole('table').getByRole('row').nth(2).waitFor();
  expect(await page.getByRole('table').getByRole('columnheader').allTextContents()).toEqual(['Email', 'Role', 'Since']);
  await menu.click();
  await nav.getByRole('link', { name: 'Audit log', exact: true }).click();
  await page.getByRole('table').getByRole('row').nth(1).waitFor();
  const table = await page.getByRole('table').evaluate((t) => ({ overflow: getComputedStyle(t).overflowX, width: t.getBoundingClientRect().width }));
  expect(table.overflow).toBe('auto');
  expect(table.width).toBeLessThanOrEqual(375);
  expect((await noSideScroll(page)).scrollWidth).toBe(375);

  // a message with a long URL wraps inside the column, not one letter per line
  await page.goto(`/a/${a.accountId}/channels/${ch.id}`);
  const text = page.locator('.message .text').filter({ hasText: 'Read this first' });
  await text.waitFor();
  expect((await noSideScroll(page)).scrollWidth).toBe(375);
  const box = (await text.boundingBox())!;
  expect(box.width).toBeGreaterThan(300);
  expect(box.x + box.width).toBeLessThanOrEqual(375);
  expect(await page.getByLabel('Message', { exact: true }).evaluate((el) => el.getBoundingClientRect().width)).toBeGreaterThan(300);
  expect(await seriousViolations(page)).toEqual([]);
  await context.close();
});

test('keyboard: edit a message (focus in, Shift+Enter a new line, Escape cancels, Enter saves, focus back); confirm starts on Cancel; reactions are toggles', async () => {
  const a = await newAccount(env.h);
  const key = await newKey(env.h, a.accountId, a.owner.email, []);
  const ch = (await request(env.h.api).post(`/accounts/${a.accountId}/channels`).set(bearer(key)).send({ name: 'keys' }).expect(201)).body;
  const msg = (await request(env.h.api).post(`/accounts/${a.accountId}/channels/${ch.id}/messages`).set(bearer(key)).send({ text: 'first draft' }).expect(201)).body;
  const { context, page } = await newPage(env);
  await signIn(page, a.owner.email);
  await page.goto(`/a/${a.accountId}/channels/${ch.id}`);
  const pane = page.getByRole('region', { name: '#keys' });
  const item = pane.getByRole('listitem').filter({ hasText: 'first draft' });
  await item.waitFor();
  const focused = () => page.evaluate(() => ({ tag: document.activeElement?.tagName, text: document.activeElement?.textContent ?? '', label: document.activeElement?.getAttribute('aria-label') }));

  // Escape cancels; focus back on the message's Edit
  await item.getByRole('button', { name: 'Edit' }).click();
  expect((await focused()).tag).toBe('TEXTAREA');
  await page.keyboard.type(' changed');
  await page.keyboard.press('Escape');
  await pane.getByLabel('Edit message').waitFor({ state: 'detached' });
  expect(await focused()).toMatchObject({ tag: 'BUTTON', text: 'Edit' });
  await item.getByText('first draft', { exact: true }).waitFor();

  // Enter saves (Shift+Enter is a new line); focus back on Edit
  await page.keyboard.press('Enter');
  expect((await focused()).tag).toBe('TEXTAREA');
  await page.keyboard.press('ControlOrMeta+A');
  await page.keyboard.type('line one');
  await page.keyboard.press('Shift+Enter');
  await page.keyboard.type('line two');
  await page.keyboard.press('Enter');
  await pane.getByLabel('Edit message').waitFor({ state: 'detached' });
  const edited = pane.getByRole('listitem').filter({ hasText: 'line two' });
  await edited.waitFor();
  expect(await focused()).toMatchObject({ tag: 'BUTTON', text: 'Edit' });
  const stored = (await request(env.h.api).get(`/accounts/${a.accountId}/channels/${ch.id}/messages`).set(bearer(key)).expect(200)).body.data[0];
  expect(stored.text).toBe('line one\nline two');

  // reactions: pressed reflects my own reaction; pressing again removes it
  const thumbs = edited.getByRole('button', { name: 'React thumbsup' });
  expect(await thumbs.getAttribute('aria-pressed')).toBe('false');
  await thumbs.click();
  await edited.getByText(':thumbsup: 1').waitFor();
  await page.waitForFunction(() => document.querySelector('[aria-label="React thumbsup"]')?.getAttribute('aria-pressed') === 'true');
  await thumbs.click();
  await edited.getByText(':thumbsup: 1').waitFor({ state: 'detached' });
  expect(await thumbs.getAttribute('aria-pressed')).toBe('false');
  const after = (await request(env.h.api).get(`/accounts/${a.accountId}/channels/${ch.id}/messages`).set(bearer(key)).expect(200)).body.data[0];
  expect(after.reactions).toEqual([]);

  // the confirm dialog starts on Cancel: a stray Enter deletes nothing
  await edited.getByRole('button', { name: 'Delete' }).click();
  const dialog = page.getByRole('dialog');
  await dialog.waitFor();
  expect(await focused()).toMatchObject({ tag: 'BUTTON', text: 'Cancel' });
  await page.keyboard.press('Enter');
  await dialog.waitFor({ state: 'hidden' });
  expect(await focused()).toMatchObject({ tag: 'BUTTON', text: 'Delete' });
  await request(env.h.api).get(`/accounts/${a.accountId}/channels/${ch.id}/threads/${msg.ts}`).set(bearer(key)).expect(200);

  // deleting for real: the opener goes with the message, so focus goes to the page's heading, not <body>
  await edited.getByRole('button', { name: 'Delete' }).click();
  await dialog.getByRole('button', { name: 'Delete' }).click();
  await edited.waitFor({ state: 'detached' });
  expect(await focused()).toMatchObject({ tag: 'H1', text: 'Channels' });
  expect(await seriousViolations(page)).toEqual([]);
  await context.close();
});

test('deleting a thread root says what happens to its replies and closes the thread; a deep link to it shows no orphan replies', async () => {
  const a = await newAccount(env.h);
  const key = await newKey(env.h, a.accountId, a.owner.email, []);
  const ch = (await request(env.h.api).post(`/accounts/${a.accountId}/channels`).set(bearer(key)).send({ name: 'threads' }).expect(201)).body;
  const root = (await request(env.h.api).post(`/accounts/${a.accountId}/channels/${ch.id}/messages`).set(bearer(key)).send({ text: 'root of the thread' }).expect(201)).body;
  for (const text of ['first reply', 'second reply']) {
    await request(env.h.api).post(`/accounts/${a.accountId}/channels/${ch.id}/messages`).set(bearer(key)).send({ text, thread_ts: root.ts }).expect(201);
  }
  const { context, page } = await newPage(env);
  await signIn(page, a.owner.email);
  const threadUrl = `/a/${a.accountId}/channels/${ch.id}/threads/${root.ts}`;
  await page.goto(threadUrl);
  const thread = page.getByRole('region', { name: 'Thread', exact: true });
  await thread.getByText('second reply').waitFor();
  const rootItem = page.getByRole('region', { name: '#threads' }).getByRole('listitem').filter({ hasText: 'root of the thread' });
  await rootItem.getByRole('button', { name: 'Delete' }).click();
  const dialog = page.getByRole('dialog');
  await dialog.getByText('Delete this message and hide its thread?').waitFor();
  await dialog.getByText('It started a thread with 2 replies.', { exact: false }).waitFor();
  await dialog.getByRole('button', { name: 'Delete' }).click();
  await thread.waitFor({ state: 'detached' });
  expect(new URL(page.url()).pathname).toBe(`/a/${a.accountId}/channels/${ch.id}`);
  expect(await page.getByText('second reply').count()).toBe(0);

  // the API keeps the replies readable by the thread's path; the app does not show them as a thread without a root
  await page.goto(threadUrl);
  await thread.getByText('The message that started this thread was deleted').waitFor();
  expect(await thread.getByText('first reply').count()).toBe(0);
  expect(await thread.getByLabel('Reply').count()).toBe(0);
  await context.close();
});

test('wrong states: a bogus channel link, an unknown account, and the DM "With" list without oneself', async () => {
  const a = await newAccount(env.h);
  const m = await addPerson(env.h, a.accountId, 'member');
  const { context, page } = await newPage(env);
  await signIn(page, a.owner.email);

  await page.goto(`/a/${a.accountId}/channels/ch_doesnotexist`);
  await page.getByRole('heading', { name: 'Channel not found' }).waitFor();
  expect(await page.getByRole('heading', { name: 'Channel', exact: true }).count()).toBe(0);
  expect(await page.getByLabel('Message', { exact: true }).count()).toBe(0);

  await page.goto('/a/acct_nosuchaccount/channels');
  await page.getByRole('heading', { name: 'Account not found', level: 1 }).waitFor();
  expect(await page.getByRole('navigation', { name: 'Main' }).count()).toBe(0);
  expect(await page.locator('header').textContent()).not.toContain('acct_nosuchaccount');
  expect(await page.title()).toBe('Account not found · teamchat');
  expect(await seriousViolations(page)).toEqual([]);

  await page.goto(`/a/${a.accountId}/dms`);
  const withList = page.getByLabel('With');
  await withList.locator('option', { hasText: m.email }).waitFor({ state: 'attached' });
  const options = await withList.locator('option').allTextContents();
  expect(options).toContain(`${m.email} (person)`);
  expect(options.some((o) => o.startsWith(a.owner.email))).toBe(false);
  await context.close();
});

test('a page that fails to draw shows "Something went wrong" with a way back, never the router\'s developer page', async () => {
  const a = await newAccount(env.h);
  const { context, page } = await newPage(env);
  await signIn(page, a.owner.email);
  // an answer the page cannot read (a list that is not a list) makes it throw while drawing
  await page.route(
    (url) => /^\/accounts\/[^/]+\/members$/.test(url.pathname),
    (route) => route.fulfill({ status: 200, contentType: 'application/json', body: JSON.stringify({ data: 5, next_cursor: null }) }),
  );
  await page.goto(`/a/${a.accountId}/members`);
  await page.getByRole('heading', { name: 'Something went wrong', level: 1 }).waitFor();
  expect(await page.getByText('Unexpected Application Error').count()).toBe(0);
  expect(await page.title()).toBe('Something went wrong · teamchat');
  expect(await seriousViolations(page)).toEqual([]);
  await page.getByRole('link', { name: 'Back to the account' }).click();
  await page.getByRole('heading', { name: 'Channels', level: 1 }).waitFor();
  await context.close();
});
