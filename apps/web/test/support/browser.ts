import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import AxeBuilder from '@axe-core/playwright';
import type { Config } from '@teamchat/core';
import { newAccount, PASSWORD, type Harness, type TestAccount } from '../../../../test/support/harness';
import { startReceiver, type Receiver } from '../../../../test/support/https-receiver';
import { startWorker, type RunningWorker } from '../../../worker/src/worker';
import { startWebhookHarness } from '../../../../test/support/webhooks';

/**
 * Browser tests: the real web host (the API app with the built web app) listening on loopback,
 * driven by Debian's Chromium through playwright-core. One browser per test file, a fresh
 * context (cookies, storage) per test.
 */
export const CHROMIUM = '/usr/bin/chromium';

export interface WebEnv {
  h: Harness;
  baseUrl: string;
  browser: Browser;
  close(): Promise<void>;
}

export async function startWebEnv(overrides: Partial<Config> = {}): Promise<WebEnv> {
  // Listen first, so the web host's public URL is this server: upload URLs (local driver) are
  // absolute, on PUBLIC_WEB_URL, and the browser PUTs the bytes there.
  let web: http.RequestListener | null = null;
  const server = http.createServer((req, res) => web!(req, res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const filesDir = fs.mkdtempSync(path.join(os.tmpdir(), 'web-files-'));
  const h = await startWebhookHarness({ publicWebUrl: baseUrl, filesDriver: 'local', filesDir, ...overrides });
  web = h.web;
  // --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start.
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
  return {
    h,
    baseUrl,
    browser,
    async close() {
      await browser.close();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
      await h.close();
    },
  };
}

/**
 * A web environment with a loopback HTTPS receiver and a real worker that relays one account's
 * events (`live`): the journeys whose deliveries or mirror lines must really arrive.
 */
export interface LiveWebEnv {
  env: WebEnv;
  rx: Receiver;
  worker: RunningWorker;
  /** the account whose events the worker relays (it relays only the accounts it is given) */
  live: TestAccount;
  close(): Promise<void>;
}

export async function startLiveWebEnv(): Promise<LiveWebEnv> {
  const env = await startWebEnv();
  const rx = await startReceiver();
  const live = await newAccount(env.h);
  const worker = startWorker(env.h.deps, { maintenanceIntervalMs: 60_000, webhooks: { accountIds: [live.accountId] } });
  return {
    env, rx, worker, live,
    async close() {
      await worker.close();
      await rx.close();
      await env.close();
    },
  };
}

export async function newPage(env: WebEnv): Promise<{ context: BrowserContext; page: Page }> {
  const context = await env.browser.newContext({ baseURL: env.baseUrl, viewport: { width: 1280, height: 860 } });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: env.baseUrl });
  const page = await context.newPage();
  return { context, page };
}

/** Signs in through the form, as a person would; lands in the account (one) or on the picker. */
export async function signIn(page: Page, email: string, password = PASSWORD): Promise<void> {
  await page.goto('/');
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
}

/** axe-core: no serious or critical violation on the page as it is now. */
export async function seriousViolations(page: Page): Promise<string[]> {
  const results = await new AxeBuilder({ page }).analyze();
  return results.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id} (${v.impact}): ${v.help} — ${v.nodes.map((n) => n.target.join(' ')).slice(0, 3).join(', ')}`);
}

const SHOTS = path.resolve(__dirname, '../../../../docs/screenshots');

/** Screenshots for the README, written only when asked (TEAMCHAT_SCREENSHOTS=1), so a test run leaves the tree clean. */
export async function screenshot(page: Page, name: string): Promise<void> {
  if (process.env.TEAMCHAT_SCREENSHOTS !== '1') return;
  fs.mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: false });
}
