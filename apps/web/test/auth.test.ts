import { addPerson, newAccount, PASSWORD, uniqueEmail } from '../../../test/support/harness';
import { newPage, seriousViolations, signIn, startWebEnv, type WebEnv } from './support/browser';

jest.setTimeout(90_000);

/** The main navigation's links, named as the web app's contract says (docs/web.md). */
const NAV = ['Channels', 'Direct messages', 'Webhooks', 'Mirrors', 'Files', 'Search', 'API keys', 'Agents', 'Approvals', 'Audit log', 'Account', 'Members'];

let env: WebEnv;
beforeAll(async () => {
  env = await startWebEnv();
});
afterAll(async () => {
  await env?.close();
});

describe('serving the app on the web host', () => {
  test('a browser navigation to any app path gets index.html with strict headers; API calls keep JSON', async () => {
    const acct = await newAccount(env.h);
    for (const p of ['/', `/accounts/${acct.accountId}/approvals/apr_x`, '/a/acct_x/webhooks/whe_y/deliveries?status=dead']) {
      const r = await fetch(env.baseUrl + p, { headers: { Accept: 'text/html,application/xhtml+xml,*/*;q=0.8' } });
      expect(r.status).toBe(200);
      expect(r.headers.get('content-type')).toMatch(/text\/html/);
      const csp = r.headers.get('content-security-policy') ?? '';
      expect(csp).toContain("script-src 'self'");
      expect(csp).toContain("connect-src 'self'");
      expect(csp).toContain("frame-ancestors 'none'");
      expect(csp).not.toContain('unsafe-inline');
      expect(r.headers.get('referrer-policy')).toBe('same-origin');
      const html = await r.text();
      // no inline script, nothing from another origin
      expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
      expect(html).not.toMatch(/(src|href)="(https?:)?\/\//);
    }
    const api = await fetch(`${env.baseUrl}/accounts/${acct.accountId}/approvals/apr_x`, { headers: { Accept: 'application/json' } });
    expect(api.status).toBe(401);
    expect(((await api.json()) as any).error.code).toBe('unauthorized');
    const asset = (await (await fetch(env.baseUrl + '/', { headers: { Accept: 'text/html' } })).text()).match(/src="(\/assets\/[^"]+\.js)"/)![1]!;
    const js = await fetch(env.baseUrl + asset);
    expect(js.status).toBe(200);
    expect(js.headers.get('cache-control')).toContain('immutable');
  });
});

describe('sign in and out', () => {
  test('a wrong password shows the API message next to the form; the right one lands in the account, the navigation is complete, sign-out ends it', async () => {
    const acct = await newAccount(env.h);
    const { context, page } = await newPage(env);
    await page.goto('/');
    await page.getByLabel('Email').fill(acct.owner.email);
    await page.getByLabel('Password').fill('wrong password!');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').filter({ hasText: 'The email or password is wrong.' }).waitFor();
    expect(await seriousViolations(page)).toEqual([]);

    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Channels', level: 1 }).waitFor();
    expect(page.url()).toContain(`/a/${acct.accountId}/channels`);
    const nav = page.getByRole('navigation', { name: 'Main' });
    for (const name of NAV) expect(await nav.getByRole('link', { name, exact: true }).count()).toBe(1);

    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('button', { name: 'Sign in' }).waitFor();
    // the server ended the session: the old cookie is refused
    const cookies = await context.cookies();
    expect(cookies.find((c) => c.name === 'tc_session')).toBeUndefined();
    await page.goto(`/a/${acct.accountId}/webhooks`);
    await page.getByRole('button', { name: 'Sign in' }).waitFor();
    await context.close();
  });

  test('a person with several accounts picks one; a deep link survives sign-in', async () => {
    const a = await newAccount(env.h);
    const b = await newAccount(env.h);
    const email = uniqueEmail('multi');
    await addPerson(env.h, a.accountId, 'admin', email);
    await addPerson(env.h, b.accountId, 'member', email);
    const { context, page } = await newPage(env);
    await signIn(page, email);
    await page.getByRole('heading', { name: 'Choose an account' }).waitFor();
    expect(await page.getByRole('link').count()).toBe(2);
    expect(await seriousViolations(page)).toEqual([]);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('button', { name: 'Sign in' }).waitFor();

    await page.goto(`/a/${a.accountId}/audit`);
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Audit log', level: 1 }).waitFor();
    await context.close();
  });
});
