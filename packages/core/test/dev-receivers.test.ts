import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { devReceiverFor, loadConfig, removeDevReceiver, writeDevReceiver } from '../src';

/**
 * Development receivers (docs/webhooks.md "Local development"): the allowance `webhooks:listen`
 * leaves for its endpoint is honoured only outside production, only for that endpoint, account
 * and exact URL, and only for a loopback address literal.
 */
const CA = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';
let dir: string;
beforeEach(() => { dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dev-receivers-')); });
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

const endpoint = { id: 'whe_abc123', accountId: 'acct_one', url: 'https://127.0.0.1:4443/listen/tok' };

test('honoured for its endpoint, account and exact URL only', () => {
  const config = { webhookDevReceiversDir: dir };
  expect(devReceiverFor(config, endpoint)).toBeNull(); // no file: the usual rules
  writeDevReceiver(config, { endpoint_id: endpoint.id, account_id: endpoint.accountId, url: endpoint.url, ca: CA });
  expect(devReceiverFor(config, endpoint)).toEqual({ host: '127.0.0.1', ca: CA });
  expect(devReceiverFor(config, { ...endpoint, accountId: 'acct_two' })).toBeNull();
  expect(devReceiverFor(config, { ...endpoint, url: 'https://127.0.0.1:4443/listen/other' })).toBeNull();
  expect(devReceiverFor(config, { ...endpoint, id: 'whe_other' })).toBeNull();
  expect(devReceiverFor({ webhookDevReceiversDir: null }, endpoint)).toBeNull(); // production: never read
  removeDevReceiver(config, endpoint.id);
  expect(devReceiverFor(config, endpoint)).toBeNull();
});

test('only a loopback address literal over https: never a name, another range or http', () => {
  const config = { webhookDevReceiversDir: dir };
  for (const url of ['https://localhost:4443/x', 'https://10.0.0.5/x', 'https://169.254.169.254/x', 'http://127.0.0.1:4443/x', 'https://[::1]:4443/x']) {
    const ep = { ...endpoint, url };
    writeDevReceiver(config, { endpoint_id: ep.id, account_id: ep.accountId, url, ca: CA });
    expect(devReceiverFor(config, ep)).toEqual(url === 'https://[::1]:4443/x' ? { host: '::1', ca: CA } : null);
  }
  // A file name is never built from anything but an endpoint id.
  expect(devReceiverFor(config, { ...endpoint, id: '../../etc/passwd' })).toBeNull();
  expect(() => writeDevReceiver(config, { endpoint_id: '../x', account_id: 'a', url: endpoint.url, ca: CA })).toThrow();
});

test('configuration: on by default outside production, off in production, and refused there when set', () => {
  const key = 'ab'.repeat(32);
  expect(loadConfig({ NODE_ENV: 'development', SECRETS_KEY: key }).webhookDevReceiversDir).toBe(path.resolve('.data', 'webhook-listen'));
  expect(loadConfig({ NODE_ENV: 'test', SECRETS_KEY: key, WEBHOOK_DEV_RECEIVERS_DIR: dir }).webhookDevReceiversDir).toBe(dir);
  expect(loadConfig({ NODE_ENV: 'production', SECRETS_KEY: key }).webhookDevReceiversDir).toBeNull();
  expect(() => loadConfig({ NODE_ENV: 'production', SECRETS_KEY: key, WEBHOOK_DEV_RECEIVERS_DIR: dir })).toThrow(/refused when NODE_ENV=production/);
  expect(() => loadConfig({ NODE_ENV: 'production', SECRETS_KEY: key }, { webhookDevReceiversDir: dir })).toThrow(/refused when NODE_ENV=production/);
});
