import { mkdtempSync, existsSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import request from 'supertest';
import { fileStoreFor, purgePendingFiles, setAccountState, unitUsage, unitsKey } from '@teamchat/core';
import { eq, files } from '@teamchat/db';
import { addPerson, bearer, newAccount, newKey, signInWeb, startHarness, UNLIMITED_PLANS, type Harness } from '../../../../test/support/harness';

/** The first bytes of a PNG (enough for file-type to recognise it). */
const PNG = Buffer.concat([Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex'), Buffer.alloc(64, 7)]);

let h: Harness;
let dir: string;
beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'files-test-'));
  h = await startHarness({ filesDir: dir, filesDriver: 'local' });
});
afterAll(async () => { await h.close(); });

type Web = Awaited<ReturnType<typeof signInWeb>>;
const base = (accountId: string) => `/accounts/${accountId}`;

async function reserve(web: Web, accountId: string, body: object, headers: Record<string, string> = {}) {
  return web.agent.post(`${base(accountId)}/uploads`).set('X-CSRF-Token', web.csrf).set(headers).send(body);
}

/** The upload URL's path and query on the web host (its origin is PUBLIC_WEB_URL). */
const localPath = (url: string) => url.replace(/^http:\/\/web\.test/, '');

async function upload(web: Web, accountId: string, bytes: Buffer, meta: { name?: string; content_type?: string } = {}) {
  const r = await reserve(web, accountId, { name: meta.name ?? 'pic.png', size: bytes.length, content_type: meta.content_type ?? 'image/png' });
  expect(r.status).toBe(201);
  const put = await request(h.web).put(localPath(r.body.upload.url)).set(r.body.upload.headers).send(bytes);
  expect(put.status).toBe(204);
  const done = await web.agent.post(`${base(accountId)}/uploads/${r.body.file.id}/complete`).set('X-CSRF-Token', web.csrf);
  expect(done.status).toBe(200);
  return done.body as { id: string; content_type: string; sha256: string; state: string };
}

describe('Files: web session only (spec Authentication rule 9)', () => {
  test('every files route refuses an API key: 403 forbidden, reason web_session_required', async () => {
    const a = await newAccount(h);
    const key = await newKey(h, a.accountId, a.owner.email, ['files:manage']);
    const tries = [
      request(h.api).post(`${base(a.accountId)}/uploads`).set(bearer(key)).send({ name: 'a.txt', size: 1, content_type: 'text/plain' }),
      request(h.api).post(`${base(a.accountId)}/uploads/file_abc/complete`).set(bearer(key)),
      request(h.api).delete(`${base(a.accountId)}/uploads/file_abc`).set(bearer(key)),
      request(h.api).get(`${base(a.accountId)}/files`).set(bearer(key)),
      request(h.api).get(`${base(a.accountId)}/files/file_abc`).set(bearer(key)),
      request(h.api).get(`${base(a.accountId)}/files/file_abc/content`).set(bearer(key)),
    ];
    for (const res of await Promise.all(tries)) {
      expect(res.status).toBe(403);
      expect(res.body.error).toMatchObject({ code: 'forbidden', reason: 'web_session_required' });
    }
  });
});

describe('Upload in three steps (local driver)', () => {
  test('reserve → PUT exactly size bytes to the signed URL (no cookie) → complete: ready, sha256, sniffed type; content served as a download', async () => {
    const a = await newAccount(h);
    const web = await signInWeb(h, a.owner.email);
    const r = await reserve(web, a.accountId, { name: 'Résumé "final".png', size: PNG.length, content_type: 'image/png' });
    expect(r.status).toBe(201);
    expect(r.body.file).toMatchObject({ name: 'Résumé "final".png', size: PNG.length, content_type: 'image/png', state: 'pending', uploaded_by: a.owner.identityId, sha256: null });
    expect(r.body.file.id).toMatch(/^file_[a-z0-9]{20}$/);
    expect(r.body.upload).toMatchObject({ method: 'PUT', headers: { 'Content-Type': 'image/png' } });
    expect(r.body.upload.url).toMatch(/^http:\/\/web\.test\/uploads\/file_[a-z0-9]+\?expires=\d+&signature=[A-Za-z0-9_-]{43}$/);
    expect(Date.parse(r.body.upload.expires_at) - Date.now()).toBeGreaterThan(50 * 60_000);
    // a pending file has no bytes to give yet
    expect((await web.agent.get(`${base(a.accountId)}/files/${r.body.file.id}/content`)).status).toBe(404);

    const put = await request(h.web).put(localPath(r.body.upload.url)).set('Content-Type', 'image/png').send(PNG);
    expect(put.status).toBe(204);
    const done = await web.agent.post(`${base(a.accountId)}/uploads/${r.body.file.id}/complete`).set('X-CSRF-Token', web.csrf);
    expect(done.status).toBe(200);
    expect(done.body).toMatchObject({ id: r.body.file.id, state: 'ready', content_type: 'image/png' });
    expect(done.body.sha256).toBe(require('node:crypto').createHash('sha256').update(PNG).digest('hex'));
    // the bytes cannot change once complete
    const again = await request(h.web).put(localPath(r.body.upload.url)).send(PNG);
    expect(again.status).toBe(400);
    expect(again.body.error).toMatchObject({ code: 'invalid_request', reason: 'not_pending' });

    const got = await web.agent.get(`${base(a.accountId)}/files/${r.body.file.id}`);
    expect(got.body).toEqual(done.body);
    const content = await web.agent.get(`${base(a.accountId)}/files/${r.body.file.id}/content`).buffer(true).parse((res, cb) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => cb(null, Buffer.concat(chunks)));
    });
    expect(content.status).toBe(200);
    expect(Buffer.compare(content.body as Buffer, PNG)).toBe(0);
    expect(content.headers['content-type']).toBe('image/png');
    expect(content.headers['content-disposition']).toBe(`attachment; filename="R_sum_ _final_.png"; filename*=UTF-8''R%C3%A9sum%C3%A9%20%22final%22.png`);
    expect(content.headers['x-content-type-options']).toBe('nosniff');
    expect(content.headers['content-security-policy']).toBe('sandbox');

    const list = await web.agent.get(`${base(a.accountId)}/files`);
    expect(list.body.data.map((f: { id: string }) => f.id)).toEqual([r.body.file.id]);
  });

  test('the reservation refuses bad names, sizes and types: 400 invalid_request naming the field', async () => {
    const a = await newAccount(h, 'starter');
    const web = await signInWeb(h, a.owner.email);
    const ok = { name: 'a.txt', size: 10, content_type: 'text/plain' };
    const cases: Array<[object, string]> = [
      [{ ...ok, name: '../etc/passwd' }, 'name'],
      [{ ...ok, name: 'a\\b' }, 'name'],
      [{ ...ok, name: 'bell\u0007' }, 'name'],
      [{ ...ok, name: '' }, 'name'],
      [{ ...ok, name: 'x'.repeat(256) }, 'name'],
      [{ ...ok, name: '..' }, 'name'],
      [{ ...ok, size: 0 }, 'size'],
      [{ ...ok, size: 1.5 }, 'size'],
      [{ ...ok, size: 25 * 1024 * 1024 + 1 }, 'size'], // starter: 25 MiB per file
      [{ ...ok, content_type: 'text/plain; charset=utf-8' }, 'content_type'],
      [{ ...ok, content_type: 'nonsense' }, 'content_type'],
    ];
    for (const [body, field] of cases) {
      const res = await reserve(web, a.accountId, body);
      expect({ body, status: res.status, code: res.body.error?.code, field: res.body.error?.field }).toEqual({ body, status: 400, code: 'invalid_request', field });
    }
    expect((await reserve(web, a.accountId, { ...ok, size: 25 * 1024 * 1024 })).status).toBe(201);
  });

  test('Idempotency-Key: the same reservation replays the same file', async () => {
    const a = await newAccount(h);
    const web = await signInWeb(h, a.owner.email);
    const key = randomUUID();
    const body = { name: 'once.txt', size: 3, content_type: 'text/plain' };
    const first = await reserve(web, a.accountId, body, { 'Idempotency-Key': key });
    const second = await reserve(web, a.accountId, body, { 'Idempotency-Key': key });
    expect(second.status).toBe(201);
    expect(second.headers['idempotent-replayed']).toBe('true');
    expect(second.body.file.id).toBe(first.body.file.id);
    expect((await h.deps.database.db.select().from(files).where(eq(files.accountId, a.accountId))).length).toBe(1);
  });

  test('a body of another length is refused and nothing is kept; an expired or altered URL is refused', async () => {
    const a = await newAccount(h);
    const web = await signInWeb(h, a.owner.email);
    const r = await reserve(web, a.accountId, { name: 'x.bin', size: 10, content_type: 'application/octet-stream' });
    const url = localPath(r.body.upload.url);
    for (const bytes of [Buffer.alloc(9), Buffer.alloc(11), Buffer.alloc(0)]) {
      const res = await request(h.web).put(url).send(bytes);
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ code: 'invalid_request', reason: 'size_mismatch' });
    }
    // no Content-Length (chunked): counted while streaming, refused beyond the reserved size
    const chunked = request(h.web).put(url).set('Transfer-Encoding', 'chunked');
    chunked.write(Buffer.alloc(6));
    chunked.write(Buffer.alloc(6));
    const res = await chunked;
    expect(res.status).toBe(400);
    expect(res.body.error.reason).toBe('size_mismatch');
    const fileDir = path.join(dir, a.accountId);
    expect(existsSync(fileDir) ? readdirSync(fileDir) : []).toEqual([]);
    const complete = await web.agent.post(`${base(a.accountId)}/uploads/${r.body.file.id}/complete`).set('X-CSRF-Token', web.csrf);
    expect(complete.status).toBe(400);
    expect(complete.body.error).toMatchObject({ code: 'invalid_request', reason: 'upload_missing' });

    // altered: another size, another file's id, a bad signature
    const other = await reserve(web, a.accountId, { name: 'y.bin', size: 10, content_type: 'application/octet-stream' });
    const forged = [
      url.replace(/signature=[^&]+/, `signature=${'A'.repeat(43)}`),
      url.replace(r.body.file.id, other.body.file.id),
      url.replace(/expires=(\d+)/, (_m, e) => `expires=${Number(e) + 3600}`),
    ];
    for (const u of forged) {
      const bad = await request(h.web).put(u).send(Buffer.alloc(10));
      expect(bad.status).toBe(403);
      expect(bad.body.error).toMatchObject({ code: 'forbidden', reason: 'invalid_upload_url' });
    }
    expect((await request(h.api).put(url).send(Buffer.alloc(10))).status).toBe(401); // the API host has no upload route: a credential is asked for

    h.clock.advance(61 * 60_000);
    try {
      const expired = await request(h.web).put(url).send(Buffer.alloc(10));
      expect(expired.status).toBe(403);
      expect(expired.body.error).toMatchObject({ code: 'forbidden', reason: 'upload_url_expired' });
    } finally {
      h.clock.reset();
    }
  });

  test('content type: the bytes decide when recognised; a dangerous declared type is never stored', async () => {
    const a = await newAccount(h);
    const web = await signInWeb(h, a.owner.email);
    expect((await upload(web, a.accountId, PNG, { content_type: 'text/html' })).content_type).toBe('image/png');
    expect((await upload(web, a.accountId, PNG, { content_type: 'image/jpeg' })).content_type).toBe('image/png');
    const html = Buffer.from('<html><script>alert(1)</script></html>');
    expect((await upload(web, a.accountId, html, { name: 'x.html', content_type: 'text/html' })).content_type).toBe('application/octet-stream');
    expect((await upload(web, a.accountId, html, { name: 'x.svg', content_type: 'image/svg+xml' })).content_type).toBe('application/octet-stream');
    expect((await upload(web, a.accountId, Buffer.from('hello'), { name: 'x.txt', content_type: 'text/plain' })).content_type).toBe('text/plain');
  });

  test('maintenance removes uploads not completed within 24 h, bytes included, and keeps ready files', async () => {
    const a = await newAccount(h);
    const web = await signInWeb(h, a.owner.email);
    const ready = await upload(web, a.accountId, PNG);
    const r = await reserve(web, a.accountId, { name: 'left.bin', size: 4, content_type: 'application/octet-stream' });
    expect((await request(h.web).put(localPath(r.body.upload.url)).send(Buffer.alloc(4))).status).toBe(204);
    const store = fileStoreFor(h.deps.config);
    const key = `${a.accountId}/${r.body.file.id}`;
    expect(await store.head(key)).toEqual({ size: 4 });
    expect(await purgePendingFiles(h.deps.database.db, store, new Date(Date.now() + 23 * 3_600_000))).toBe(0);
    expect(await purgePendingFiles(h.deps.database.db, store, new Date(Date.now() + 25 * 3_600_000))).toBeGreaterThanOrEqual(1);
    expect(await store.head(key)).toBeNull();
    expect(await h.deps.database.db.select().from(files).where(eq(files.id, r.body.file.id))).toEqual([]);
    expect((await web.agent.get(`${base(a.accountId)}/files/${ready.id}`)).status).toBe(200);
  });
});

describe('Abandoning an upload (DELETE /uploads/{fileId})', () => {
  test('the uploader abandons a pending upload: 204, its bytes and reservation gone at once, out of the list and the quota', async () => {
    const small = Object.fromEntries(Object.entries(UNLIMITED_PLANS).map(([p, l]) => [p, { ...l, fileBytes: 600, storageBytes: 1000 }]));
    const q = await startHarness({ filesDir: dir, filesDriver: 'local', planLimits: small as typeof UNLIMITED_PLANS });
    try {
      const a = await newAccount(q);
      const web = await signInWeb(q, a.owner.email);
      const reserveIn = (size: number) => web.agent.post(`${base(a.accountId)}/uploads`).set('X-CSRF-Token', web.csrf).send({ name: 'big.bin', size, content_type: 'application/octet-stream' });
      const r = await reserveIn(600);
      expect(r.status).toBe(201);
      expect((await request(q.web).put(localPath(r.body.upload.url)).send(Buffer.alloc(600))).status).toBe(204);
      const store = fileStoreFor(q.deps.config);
      const key = `${a.accountId}/${r.body.file.id}`;
      expect(await store.head(key)).toEqual({ size: 600 });
      expect((await reserveIn(600)).status).toBe(429); // the reservation counts against the storage

      const gone = await web.agent.delete(`${base(a.accountId)}/uploads/${r.body.file.id}`).set('X-CSRF-Token', web.csrf);
      expect(gone.status).toBe(204);
      expect(await store.head(key)).toBeNull();
      expect((await web.agent.get(`${base(a.accountId)}/files`)).body.data.map((f: { id: string }) => f.id)).not.toContain(r.body.file.id);
      expect((await reserveIn(600)).status).toBe(201); // its storage is free again
      // again: the file is gone; completing it: gone
      expect((await web.agent.delete(`${base(a.accountId)}/uploads/${r.body.file.id}`).set('X-CSRF-Token', web.csrf)).status).toBe(404);
      expect((await web.agent.post(`${base(a.accountId)}/uploads/${r.body.file.id}/complete`).set('X-CSRF-Token', web.csrf)).status).toBe(404);
    } finally {
      await q.close();
    }
  });

  test('only the uploader, only while pending: another person 404, a completed file 400 not_pending', async () => {
    const a = await newAccount(h);
    const web = await signInWeb(h, a.owner.email);
    const ready = await upload(web, a.accountId, PNG);
    const done = await web.agent.delete(`${base(a.accountId)}/uploads/${ready.id}`).set('X-CSRF-Token', web.csrf);
    expect(done.status).toBe(400);
    expect(done.body.error).toMatchObject({ code: 'invalid_request', reason: 'not_pending' });
    expect((await web.agent.get(`${base(a.accountId)}/files/${ready.id}`)).status).toBe(200);

    const r = await reserve(web, a.accountId, { name: 'mine.bin', size: 4, content_type: 'application/octet-stream' });
    const other = await addPerson(h, a.accountId, 'member');
    const otherWeb = await signInWeb(h, other.email);
    const theirs = await otherWeb.agent.delete(`${base(a.accountId)}/uploads/${r.body.file.id}`).set('X-CSRF-Token', otherWeb.csrf);
    expect(theirs.status).toBe(404);
    expect(await h.deps.database.db.select({ id: files.id }).from(files).where(eq(files.id, r.body.file.id))).toHaveLength(1);
  });
});

describe('Account states reach the upload URL (spec: Account states)', () => {
  test.each(['read_only', 'suspended'] as const)('a %s account refuses the bytes: 403 with that code, nothing stored, the file stays pending', async (state) => {
    const a = await newAccount(h);
    const web = await signInWeb(h, a.owner.email);
    const r = await reserve(web, a.accountId, { name: 'late.bin', size: 8, content_type: 'application/octet-stream' });
    expect(r.status).toBe(201);
    await h.deps.database.db.transaction((tx) => setAccountState(tx, a.accountId, state));
    const put = await request(h.web).put(localPath(r.body.upload.url)).send(Buffer.alloc(8));
    expect(put.status).toBe(403);
    expect(put.body.error).toMatchObject({ code: state, message: expect.any(String) });
    expect(await fileStoreFor(h.deps.config).head(`${a.accountId}/${r.body.file.id}`)).toBeNull();
    const [row] = await h.deps.database.db.select().from(files).where(eq(files.id, r.body.file.id));
    expect(row.state).toBe('pending');
    // back to active, the same URL (still valid) takes the bytes
    await h.deps.database.db.transaction((tx) => setAccountState(tx, a.accountId, 'active'));
    expect((await request(h.web).put(localPath(r.body.upload.url)).send(Buffer.alloc(8))).status).toBe(204);
  });
});

describe('A download costs read units by its size (spec: Limits, 1 per 16 KB returned, minimum 1)', () => {
  const seatUsed = async (accountId: string, userId: string) => (await unitUsage({
    redis: h.deps.redis, keys: h.deps.config, accountId, seatUserId: userId, limits: h.deps.config.planLimits.pro, now: h.deps.now(),
  })).used;
  const download = (web: Web, accountId: string, fileId: string) =>
    web.agent.get(`${base(accountId)}/files/${fileId}/content`).buffer(true).parse((res, cb) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => cb(null, Buffer.concat(chunks)));
    });

  test('100 KB costs ceil(102,400 / 16,384) = 7 units; a small file 1', async () => {
    const a = await newAccount(h, 'pro');
    const web = await signInWeb(h, a.owner.email);
    const big = await upload(web, a.accountId, Buffer.alloc(100 * 1024, 7), { name: 'big.bin', content_type: 'application/octet-stream' });
    const small = await upload(web, a.accountId, PNG);

    const before = await seatUsed(a.accountId, a.owner.userId);
    const got = await download(web, a.accountId, big.id);
    expect(got.status).toBe(200);
    expect((got.body as Buffer).length).toBe(100 * 1024);
    expect(got.headers['x-call-units-cost']).toBe('7');
    expect(await seatUsed(a.accountId, a.owner.userId)).toBe(before + 7);

    const one = await download(web, a.accountId, small.id);
    expect(one.status).toBe(200);
    expect(one.headers['x-call-units-cost']).toBe('1');
    expect(await seatUsed(a.accountId, a.owner.userId)).toBe(before + 8);
  });

  test('a budget too small for the file answers 429 budget_exceeded before any byte of it is sent', async () => {
    const a = await newAccount(h, 'pro');
    const web = await signInWeb(h, a.owner.email);
    const big = await upload(web, a.accountId, Buffer.alloc(100 * 1024, 7), { name: 'big.bin', content_type: 'application/octet-stream' });
    const limit = h.deps.config.planLimits.pro.unitsPerDay;
    // 3 units left: the call's first unit passes, the other 6 do not
    await h.deps.redis.set(unitsKey(h.deps.config, a.accountId, a.owner.userId, h.deps.now()), String(limit - 3));
    const res = await web.agent.get(`${base(a.accountId)}/files/${big.id}/content`);
    expect(res.status).toBe(429);
    expect(res.headers['content-disposition']).toBeUndefined();
    expect(res.body.error).toMatchObject({
      code: 'budget_exceeded', scope: 'seat_units_per_day', budget: { limit, used: limit - 2 },
    });
    // the refused remainder was not charged: only the call's first unit
    expect(await seatUsed(a.accountId, a.owner.userId)).toBe(limit - 2);
  });
});

describe('Storage quota per plan', () => {
  test('a reservation that would pass the quota → 429 budget_exceeded with budget {limit, used, resets_at: null}', async () => {
    const small = Object.fromEntries(Object.entries(UNLIMITED_PLANS).map(([p, l]) => [p, { ...l, fileBytes: 600, storageBytes: 1000 }]));
    const q = await startHarness({ filesDir: dir, planLimits: small as typeof UNLIMITED_PLANS });
    try {
      const a = await newAccount(q);
      const web = await signInWeb(q, a.owner.email);
      const r = (size: number) => web.agent.post(`${base(a.accountId)}/uploads`).set('X-CSRF-Token', web.csrf).send({ name: 'q.bin', size, content_type: 'application/octet-stream' });
      expect((await r(601)).body.error).toMatchObject({ code: 'invalid_request', field: 'size' });
      expect((await r(600)).status).toBe(201);
      const over = await r(401);
      expect(over.status).toBe(429);
      expect(over.body.error).toMatchObject({ code: 'budget_exceeded', budget: { limit: 1000, used: 600, resets_at: null } });
      // concurrent reservations never pass the quota together
      const results = await Promise.all([r(300), r(300), r(300)]);
      expect(results.map((x) => x.status).sort()).toEqual([201, 429, 429]);
    } finally {
      await q.close();
    }
  });
});

describe('Who may see a file; attachments', () => {
  test('uploader and members of a channel where it is attached see it; others get 404; attachments are checked', async () => {
    const a = await newAccount(h);
    const mate = await addPerson(h, a.accountId, 'member');
    const outsider = await addPerson(h, a.accountId, 'member');
    const ownerKey = await newKey(h, a.accountId, a.owner.email, []);
    const mateKey = await newKey(h, a.accountId, mate.email, []);
    const owner = await signInWeb(h, a.owner.email);
    const mateWeb = await signInWeb(h, mate.email);
    const outsiderWeb = await signInWeb(h, outsider.email);
    const file = await upload(owner, a.accountId, PNG);
    const path1 = `${base(a.accountId)}/files/${file.id}`;

    // not yet attached: only the uploader
    for (const web of [mateWeb, outsiderWeb]) {
      expect((await web.agent.get(path1)).status).toBe(404);
      expect((await web.agent.get(`${path1}/content`)).body.error.code).toBe('not_found');
      expect((await web.agent.get(`${base(a.accountId)}/files`)).body.data).toEqual([]);
    }
    const ch = await request(h.api).post(`${base(a.accountId)}/channels`).set(bearer(ownerKey)).send({ name: 'pics' });
    await request(h.api).post(`${base(a.accountId)}/channels/${ch.body.id}/members`).set(bearer(ownerKey)).send({ identity_id: mate.identity_id });
    // the mate may not attach a file they cannot see
    const stolen = await request(h.api).post(`${base(a.accountId)}/channels/${ch.body.id}/messages`).set(bearer(mateKey))
      .send({ text: 'mine now', attachments: [{ file_id: file.id }] });
    expect(stolen.status).toBe(400);
    expect(stolen.body.error).toMatchObject({ code: 'invalid_request', field: 'attachments.0.file_id' });

    const posted = await request(h.api).post(`${base(a.accountId)}/channels/${ch.body.id}/messages`).set(bearer(ownerKey))
      .send({ text: 'look', attachments: [{ file_id: file.id }] });
    expect(posted.status).toBe(201);
    expect(posted.body.attachments).toEqual([{ file_id: file.id, name: 'pic.png', size: PNG.length, content_type: 'image/png' }]);
    const [event] = (await h.deps.database.db.execute<{ data: Record<string, unknown> }>(
      require('@teamchat/db').sql`SELECT data FROM events WHERE account_id = ${a.accountId} AND type = 'message.posted'`)).rows;
    expect(event.data.attachments_count).toBe(1);
    expect(JSON.stringify(event.data)).not.toContain(file.id);

    expect((await mateWeb.agent.get(path1)).status).toBe(200);
    expect((await mateWeb.agent.get(`${path1}/content`)).status).toBe(200);
    expect((await mateWeb.agent.get(`${base(a.accountId)}/files`)).body.data.map((f: { id: string }) => f.id)).toEqual([file.id]);
    expect((await outsiderWeb.agent.get(path1)).status).toBe(404);
    // now visible to the mate, who may attach it too
    const reshared = await request(h.api).post(`${base(a.accountId)}/channels/${ch.body.id}/messages`).set(bearer(mateKey))
      .send({ text: 'again', attachments: [{ file_id: file.id }] });
    expect(reshared.status).toBe(201);

    // a pending file, an unknown id, another account's file: refused, naming the field
    const pending = await reserve(owner, a.accountId, { name: 'p.bin', size: 1, content_type: 'application/octet-stream' });
    const b = await newAccount(h);
    const foreign = await upload(await signInWeb(h, b.owner.email), b.accountId, PNG);
    for (const id of [pending.body.file.id, 'file_nope', foreign.id]) {
      const res = await request(h.api).post(`${base(a.accountId)}/channels/${ch.body.id}/messages`).set(bearer(ownerKey))
        .send({ text: 'x', attachments: [{ url: 'https://example.com/a' }, { file_id: id }] });
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ code: 'invalid_request', field: 'attachments.1.file_id' });
    }
    // another account's file through its own id on this account's path: 404; this account's path from the other account: not a member
    expect((await owner.agent.get(`${base(a.accountId)}/files/${foreign.id}`)).status).toBe(404);
    expect((await owner.agent.get(`${base(b.accountId)}/files/${foreign.id}`)).status).toBe(403);

    // deleting one message does not delete the file another message uses (nor the file at all)
    const del = await request(h.web).delete(`${base(a.accountId)}/channels/${ch.body.id}/messages/${posted.body.ts}`)
      .set('Cookie', owner.cookie).set('X-CSRF-Token', owner.csrf);
    expect(del.status).toBe(204);
    expect((await mateWeb.agent.get(`${path1}/content`)).status).toBe(200);

    // an edit that drops the attachment: the file follows the message
    const edit = await request(h.api).patch(`${base(a.accountId)}/channels/${ch.body.id}/messages/${reshared.body.ts}`).set(bearer(mateKey))
      .send({ attachments: [] });
    expect(edit.status).toBe(200);
    expect((await mateWeb.agent.get(path1)).status).toBe(404);
    expect((await owner.agent.get(path1)).status).toBe(200);
  });

  test('the files list is paged newest first with a cursor bound to the caller', async () => {
    const a = await newAccount(h);
    const web = await signInWeb(h, a.owner.email);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await upload(web, a.accountId, Buffer.from(`file ${i}`), { name: `f${i}.txt`, content_type: 'text/plain' })).id);
    const first = await web.agent.get(`${base(a.accountId)}/files`).query({ limit: 2 });
    expect(first.body.data.map((f: { id: string }) => f.id)).toEqual([ids[2], ids[1]]);
    const second = await web.agent.get(`${base(a.accountId)}/files`).query({ limit: 2, cursor: first.body.next_cursor });
    expect(second.body.data.map((f: { id: string }) => f.id)).toEqual([ids[0]]);
    expect(second.body.next_cursor).toBeNull();
    const bad = await web.agent.get(`${base(a.accountId)}/files`).query({ cursor: 'garbage' });
    expect(bad.body.error.code).toBe('invalid_cursor');
  });
});
