import { spawn, execFile } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { eq, webhookEndpoints } from '@teamchat/db';
import { verifyDelivery } from '@teamchat/client';
import { startDeliveryEngine, type DeliveryEngine } from '@teamchat/delivery';
import { callerFor, makeChannel, messagingAccount, post } from '../../../test/support/messaging';
import { newKey, startHarness, type Harness } from '../../../test/support/harness';
import { testDatabaseUrl } from '../../../test/support/env';
import { eventually } from '../../../test/support/webhooks';

/**
 * `webhooks:listen` end to end (README "Operator CLI"; docs/webhooks.md "Local development"): the
 * command is spawned as `npm run -s admin` runs it, registers an endpoint as the owner, the real
 * delivery engine (no WEBHOOK_ALLOWED_HOSTS, no WEBHOOK_CA_FILE) delivers to its loopback HTTPS
 * receiver through the development receiver file, the delivery is printed verified and forwarded,
 * an API caller cannot reuse the allowance, and SIGINT removes the endpoint and its file.
 */
const ROOT = path.resolve(__dirname, '../../..');
const TSX = require.resolve('tsx/cli');
const SECRETS_KEY = 'ab'.repeat(32);
let h: Harness;
let worker: DeliveryEngine;
let devDir: string;
const accountIds: string[] = [];

beforeAll(async () => {
  devDir = fs.mkdtempSync(path.join(os.tmpdir(), 'teamchat-dev-receivers-'));
  h = await startHarness({ secretsKey: SECRETS_KEY, webhookDevReceiversDir: devDir, webhookRetryScheduleMs: [200, 200, 200], webhookTimeoutMs: 2500 });
  worker = startDeliveryEngine(h.deps, { accountIds, maintenanceIntervalMs: 300 });
});
afterAll(async () => {
  await worker.close();
  await h.close();
  fs.rmSync(devDir, { recursive: true, force: true });
});

function cliEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return { ...process.env, NODE_ENV: 'test', DATABASE_URL: testDatabaseUrl(), SECRETS_KEY, WEBHOOK_DEV_RECEIVERS_DIR: devDir, WEBHOOK_ALLOWED_HOSTS: '', WEBHOOK_CA_FILE: '', ...extra };
}

test('listen: registers as the owner, prints each delivery verified, forwards it, and SIGINT removes the endpoint', async () => {
  const a = await messagingAccount(h);
  accountIds.push(a.accountId);
  const ch = await makeChannel(a.ownerApi);

  // The developer's app: plain HTTP on loopback.
  const forwarded: Array<{ body: string; headers: http.IncomingHttpHeaders }> = [];
  const app = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      forwarded.push({ body: Buffer.concat(chunks).toString('utf8'), headers: req.headers });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => app.listen(0, '127.0.0.1', r));
  const appUrl = `http://127.0.0.1:${(app.address() as { port: number }).port}/hook`;

  const cli = spawn(process.execPath, [TSX, 'apps/cli/src/main.ts', 'webhooks:listen', '--account', a.accountId, '--events', 'message.posted', '--forward-to', appUrl, '--json'], {
    cwd: ROOT, env: cliEnv(), stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  cli.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  cli.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const exited = new Promise<number | null>((r) => cli.once('exit', (code) => r(code)));
  try {
    await eventually(async () => {
      if (cli.exitCode !== null) throw new Error(`webhooks:listen exited: ${stderr}`);
      return stderr.includes('Ctrl-C removes the endpoint');
    }, 60_000, 'the listener');
    const endpointId = /endpoint (whe_[a-z0-9]+)/.exec(stderr)![1];
    const secret = /signing secret: (whsec_\S+)/.exec(stderr)![1];
    const url = /listening on (https:\/\/127\.0\.0\.1:\d+\/listen\/[0-9a-f]+)/.exec(stderr)![1];
    const [row] = await h.deps.database.db.select().from(webhookEndpoints).where(eq(webhookEndpoints.id, endpointId));
    expect(row).toMatchObject({ accountId: a.accountId, url, enabled: true, events: ['message.posted'], createdVia: 'web_session', createdByUserId: a.owner.userId });
    expect(fs.existsSync(path.join(devDir, `${endpointId}.json`))).toBe(true);

    const posted = await post(a.ownerApi, ch, { text: 'to my laptop' });
    const line = await eventually(async () => {
      const lines = stdout.trim().split('\n').filter(Boolean);
      return lines.length ? JSON.parse(lines[0]) : null;
    }, 20_000, 'the printed delivery');
    expect(line).toMatchObject({
      event_type: 'message.posted', event_id: expect.stringMatching(/^evt_/), delivery_id: expect.stringMatching(/^dlv_/), attempt: 1,
      verified: true, reason: null, status: 204, forwarded_status: 204, latency_ms: expect.any(Number),
    });
    expect(stdout.trim().split('\n')).toHaveLength(1); // --json: one line per delivery, nothing else on stdout
    // The app got the raw body and the signature headers: it verifies with the secret the command printed.
    expect(forwarded).toHaveLength(1);
    const event = verifyDelivery({ rawBody: forwarded[0].body, headers: forwarded[0].headers, secrets: secret });
    expect(event).toMatchObject({ id: line.event_id, type: 'message.posted', ts: posted.ts });

    // An API caller of the same account cannot use the allowance: the same loopback URL, or the
    // endpoint moved to another loopback URL, is refused by the URL guard as always.
    const key = await newKey(h, a.accountId, a.owner.email, ['webhooks:manage']);
    const api = callerFor(h, a.accountId, key, a.owner.identityId, a.owner.email);
    const again = await api.post('/webhooks', { url, events: ['message.posted'], channels: 'all' });
    expect(again.status).toBe(400);
    expect(again.body).toMatchObject({ error: { reason: 'private_address' } });
    const moved = await api.patch(`/webhooks/${endpointId}`, { url: url.replace('/listen/', '/elsewhere/') });
    expect(moved.status).toBe(400);
    expect(moved.body).toMatchObject({ error: { reason: 'private_address' } });

    cli.kill('SIGINT');
    expect(await exited).toBe(0);
    expect(stderr).toContain(`removed endpoint ${endpointId}`);
    const [after] = await h.deps.database.db.select().from(webhookEndpoints).where(eq(webhookEndpoints.id, endpointId));
    expect(after.deletedAt).toBeInstanceOf(Date);
    expect(fs.existsSync(path.join(devDir, `${endpointId}.json`))).toBe(false);
  } finally {
    if (cli.exitCode === null) cli.kill('SIGKILL');
    await new Promise<void>((r) => app.close(() => r()));
  }
}, 120_000);

test('refused when NODE_ENV=production, before anything is registered (exit 2)', async () => {
  const a = await messagingAccount(h);
  const out = await promisify(execFile)(process.execPath, [TSX, 'apps/cli/src/main.ts', 'webhooks:listen', '--account', a.accountId, '--json'], {
    cwd: ROOT, env: cliEnv({ NODE_ENV: 'production', WEBHOOK_DEV_RECEIVERS_DIR: '' }),
  }).then(() => ({ code: 0, stdout: '' }), (err: { code: number; stdout: string }) => err);
  expect(out.code).toBe(2);
  expect(JSON.parse(out.stdout)).toMatchObject({ ok: false, error: { code: 'forbidden', message: expect.stringMatching(/refused when NODE_ENV=production/) } });
  const rows = await h.deps.database.db.select().from(webhookEndpoints).where(eq(webhookEndpoints.accountId, a.accountId));
  expect(rows).toEqual([]);
}, 60_000);
