import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import type { AddressInfo } from 'node:net';
import { fileStoreFor, loadConfig, storageKeyOf, type FileStore } from '@teamchat/core';
import { S3_ANSWER_TIMEOUT_MS, S3_CONNECT_TIMEOUT_MS, S3_MAX_ATTEMPTS } from '../../../../packages/core/src/files/storage/s3';
import { newAccount, signInWeb, startHarness, type Harness } from '../../../../test/support/harness';
import { tcpProxy } from '../../../../test/support/tcp-proxy';
const S3rver = require('s3rver');

/** The S3 driver against a real S3-compatible server (s3rver) on loopback, started by this test. */
let server: { run(): Promise<AddressInfo>; close(): Promise<void> };
let endpoint: string;
let h: Harness;
let store: FileStore;
const PNG = Buffer.concat([Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex'), Buffer.alloc(5000, 3)]);

beforeAll(async () => {
  // s3rver's fixed test credentials, read by the SDK from the environment as in production
  process.env.AWS_ACCESS_KEY_ID = 'S3RVER';
  process.env.AWS_SECRET_ACCESS_KEY = 'S3RVER';
  server = new S3rver({
    address: '127.0.0.1', port: 0, silent: true,
    directory: mkdtempSync(path.join(tmpdir(), 's3rver-')),
    configureBuckets: [{ name: 'teamchat-files' }],
  });
  const address = await server.run();
  endpoint = `http://127.0.0.1:${address.port}`;
  h = await startHarness({ filesDriver: 's3', s3Endpoint: endpoint, s3Bucket: 'teamchat-files', s3Region: 'us-east-1' });
  store = fileStoreFor(h.deps.config);
});
afterAll(async () => {
  (store as unknown as { close?: () => void }).close?.();
  await h.close();
  await server.close();
});

describe('S3 driver (FILES_DRIVER=s3) against s3rver', () => {
  test('put (streamed, no chunk framing stored), head, get, delete; put refuses a stream of another length, and the SDK writes nothing to the console', async () => {
    const key = storageKeyOf('acct_s3test', 'file_one');
    await store.put(key, Readable.from([PNG.subarray(0, 100), PNG.subarray(100)]), PNG.length);
    expect(await store.head(key)).toEqual({ size: PNG.length });
    const chunks: Buffer[] = [];
    for await (const c of (await store.get(key))!) chunks.push(c as Buffer);
    expect(Buffer.compare(Buffer.concat(chunks), PNG)).toBe(0);
    await store.delete(key);
    expect(await store.head(key)).toBeNull();
    expect(await store.get(key)).toBeNull();
    // The refused puts are the caller's errors: the SDK itself writes no plain-text line (by
    // default it warns on console about a failed streamed request).
    const spies = (['log', 'info', 'warn', 'error'] as const).map((m) => jest.spyOn(console, m));
    try {
      await expect(store.put(key, Readable.from([Buffer.alloc(10)]), 11)).rejects.toThrow(/expected 11 bytes, received 10/);
      await expect(store.put(key, Readable.from([Buffer.alloc(12)]), 11)).rejects.toThrow(/expected 11 bytes/);
      for (const spy of spies) expect(spy).not.toHaveBeenCalled();
    } finally {
      for (const spy of spies) spy.mockRestore();
    }
    expect(await store.head(key)).toBeNull();
  });

  test('the three steps through the API: a presigned PUT of exactly size bytes, then complete and download', async () => {
    const a = await newAccount(h);
    const web = await signInWeb(h, a.owner.email);
    const r = await web.agent.post(`/accounts/${a.accountId}/uploads`).set('X-CSRF-Token', web.csrf)
      .send({ name: 'p.png', size: PNG.length, content_type: 'image/png' });
    expect(r.status).toBe(201);
    expect(r.body.upload.url.startsWith(`${endpoint}/teamchat-files/${a.accountId}/${r.body.file.id}?`)).toBe(true);
    expect(r.body.upload.url).toContain('X-Amz-Signature=');
    // Content-Length is signed (S3 refuses another length; s3rver does not check it), and
    // completing checks the stored size whatever the server did.
    expect(new URL(r.body.upload.url).searchParams.get('X-Amz-SignedHeaders')).toBe('content-length;content-type;host');
    await fetch(r.body.upload.url, { method: 'PUT', headers: r.body.upload.headers, body: PNG.subarray(1) });
    const early = await web.agent.post(`/accounts/${a.accountId}/uploads/${r.body.file.id}/complete`).set('X-CSRF-Token', web.csrf);
    expect(early.body.error).toMatchObject({ code: 'invalid_request', reason: 'size_mismatch' });
    const put = await fetch(r.body.upload.url, { method: 'PUT', headers: r.body.upload.headers, body: PNG });
    expect(put.status).toBe(200);
    const done = await web.agent.post(`/accounts/${a.accountId}/uploads/${r.body.file.id}/complete`).set('X-CSRF-Token', web.csrf);
    expect(done.body).toMatchObject({ state: 'ready', content_type: 'image/png', size: PNG.length });
    const content = await web.agent.get(`/accounts/${a.accountId}/files/${r.body.file.id}/content`).buffer(true).parse((res, cb) => {
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('end', () => cb(null, Buffer.concat(parts)));
    });
    expect(content.status).toBe(200);
    expect(Buffer.compare(content.body as Buffer, PNG)).toBe(0);
    expect(content.headers['content-disposition']).toMatch(/^attachment;/);
  });

  test('a storage that does not answer fails the call within its bounds instead of holding it (then serves again)', async () => {
    const key = storageKeyOf('acct_s3frozen', 'file_one');
    await store.put(key, Readable.from([PNG]), PNG.length);
    const proxy = await tcpProxy({ host: '127.0.0.1', port: Number(new URL(endpoint).port) });
    const behind = fileStoreFor({ ...h.deps.config, s3Endpoint: `http://127.0.0.1:${proxy.port}` });
    try {
      expect(await behind.head(key)).toEqual({ size: PNG.length });
      proxy.freeze();
      const started = Date.now();
      await expect(behind.head(key)).rejects.toThrow();
      await expect(behind.get(key)).rejects.toThrow();
      expect(Date.now() - started).toBeLessThan(2 * S3_MAX_ATTEMPTS * (S3_CONNECT_TIMEOUT_MS + S3_ANSWER_TIMEOUT_MS));
      proxy.thaw();
      expect(await behind.head(key)).toEqual({ size: PNG.length });
    } finally {
      proxy.thaw();
      (behind as unknown as { close?: () => void }).close?.();
      await proxy.close();
      await store.delete(key);
    }
  }, 60_000);

  test('configuration: FILES_DRIVER=s3 needs S3_BUCKET', () => {
    expect(() => loadConfig({ NODE_ENV: 'test', FILES_DRIVER: 's3' }, { secretsKey: 'ab'.repeat(32) })).toThrow(/S3_BUCKET/);
  });
});
