import { randomUUID } from 'node:crypto';
import { signInWeb, startHarness, type Harness } from '../../../../test/support/harness';
import { addToChannel, byType, eventsOf, makeChannel, memberCaller, messagingAccount, post } from '../../../../test/support/messaging';

let h: Harness;
beforeAll(async () => { h = await startHarness({ limitsEnabled: false }); });
afterAll(async () => { await h.close(); });

const TS = /^\d{10}\.\d{6}$/;
const micros = (ts: string) => BigInt(ts.replace('.', ''));

describe('Messages (spec: Endpoints / Messages)', () => {
  test('post answer and edge validation (the post path, docs/performance.md): JSON headers as res.json sent them; every problem listed; unknown fields ignored', async () => {
    const a = await messagingAccount(h);
    const ch = await makeChannel(a.ownerApi);
    const res = await a.ownerApi.post(`/channels/${ch}/messages`, { text: 'héllo', bogus: 1 });
    expect(res.status).toBe(201);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(Number(res.headers['content-length'])).toBe(Buffer.byteLength(res.text));
    expect(res.headers['x-request-id']).toMatch(/^req_[0-9a-z]{20}$/);
    expect(res.body.text).toBe('héllo');
    expect(res.body).not.toHaveProperty('bogus');
    const bad = await a.ownerApi.post(`/channels/${ch}/messages`, { text: 5, client_ref: 7 });
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('invalid_request');
    expect(bad.body.error.details.map((d: { field: string }) => d.field).sort()).toEqual(['client_ref', 'text']);
  });

  test('post echoes client_ref, returns ts, version and ETag; list is newest first with versions', async () => {
    const a = await messagingAccount(h);
    const ch = await makeChannel(a.ownerApi);
    const res = await a.ownerApi.post(`/channels/${ch}/messages`, {
      text: 'first', client_ref: 'cr-1', attachments: [{ title: 'spec', url: 'https://example.com/spec.pdf' }], links: ['https://example.com'],
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      channel_id: ch, author: a.owner.identityId, text: 'first', client_ref: 'cr-1', version: 1, thread_ts: null,
      links: ['https://example.com'], attachments: [{ title: 'spec', url: 'https://example.com/spec.pdf' }], session: null,
    });
    expect(res.body.ts).toMatch(TS);
    expect(res.headers.etag).toBe('"1"');
    await post(a.ownerApi, ch, { text: 'second' });
    const list = await a.ownerApi.get(`/channels/${ch}/messages`);
    expect(list.status).toBe(200);
    expect(list.body.data.map((m: { text: string }) => m.text)).toEqual(['second', 'first']);
    for (const m of list.body.data) expect(m.version).toBe(1);
  });

  test('Decision "ts": 20 rapid concurrent posts get 20 distinct, strictly increasing ts', async () => {
    const a = await messagingAccount(h);
    const ch = await makeChannel(a.ownerApi);
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => a.ownerApi.post(`/channels/${ch}/messages`, { text: `n${i}` })));
    for (const r of results) expect(r.status).toBe(201);
    const tss = results.map((r) => r.body.ts as string);
    expect(new Set(tss).size).toBe(20);
    const list = await a.ownerApi.get(`/channels/${ch}/messages?limit=50`);
    const listed = list.body.data.map((m: { ts: string }) => m.ts) as string[];
    expect(listed).toHaveLength(20);
    // Newest first, strictly decreasing, and each ts is the ts some post answered.
    for (let i = 1; i < listed.length; i++) expect(micros(listed[i - 1]) > micros(listed[i])).toBe(true);
    expect([...listed].sort()).toEqual([...tss].sort());
  });

  test('Decision "ts": ts stays strictly increasing when the clock value repeats (same microsecond)', async () => {
    const a = await messagingAccount(h);
    const ch = await makeChannel(a.ownerApi);
    const first = await post(a.ownerApi, ch, { text: 'a' });
    // Push the channel's last ts far into the future: later posts must still increase by 1 µs.
    const { sql } = await import('@teamchat/db');
    await h.deps.database.db.execute(sql`UPDATE channels SET last_ts_micros = ${(micros(first.ts) + 10_000_000_000n).toString()}::bigint WHERE id = ${ch}`);
    const b = await post(a.ownerApi, ch, { text: 'b' });
    const c = await post(a.ownerApi, ch, { text: 'c' });
    expect(micros(c.ts) - micros(b.ts)).toBe(1n);
  });

  test('threads: replies carry thread_ts, the root counts them, a reply to a reply joins the root thread', async () => {
    const a = await messagingAccount(h);
    const ch = await makeChannel(a.ownerApi);
    const root = await post(a.ownerApi, ch, { text: 'root' });
    const r1 = await post(a.ownerApi, ch, { text: 'r1', thread_ts: root.ts });
    expect(r1.thread_ts).toBe(root.ts);
    const r2 = await post(a.ownerApi, ch, { text: 'r2', thread_ts: r1.ts });
    expect(r2.thread_ts).toBe(root.ts);
    const thread = await a.ownerApi.get(`/channels/${ch}/threads/${root.ts}`);
    expect(thread.status).toBe(200);
    expect(thread.body.data.map((m: { text: string }) => m.text)).toEqual(['root', 'r1', 'r2']);
    expect(thread.body.data[0].reply_count).toBe(2);
    // The channel list shows roots only.
    const list = await a.ownerApi.get(`/channels/${ch}/messages`);
    expect(list.body.data.map((m: { text: string }) => m.text)).toEqual(['root']);
    // Paging a thread.
    const p1 = await a.ownerApi.get(`/channels/${ch}/threads/${root.ts}?limit=2`);
    const p2 = await a.ownerApi.get(`/channels/${ch}/threads/${root.ts}?limit=2&cursor=${encodeURIComponent(p1.body.next_cursor)}`);
    expect(p2.body.data.map((m: { text: string }) => m.text)).toEqual(['r2']);
    const missing = await a.ownerApi.post(`/channels/${ch}/messages`, { text: 'x', thread_ts: '1000000000.000001' });
    expect(missing.status).toBe(400);
    expect(missing.body.error.field).toBe('thread_ts');
    expect((await a.ownerApi.get(`/channels/${ch}/threads/1000000000.000001`)).status).toBe(404);
  });

  test('reactions: PUT adds (idempotent), DELETE removes; the message lists them', async () => {
    const a = await messagingAccount(h);
    const bob = await memberCaller(h, a.accountId);
    const ch = await makeChannel(a.ownerApi);
    await addToChannel(a.ownerApi, ch, bob.identityId);
    const m = await post(a.ownerApi, ch, { text: 'react to me' });
    const put = await bob.put(`/channels/${ch}/messages/${m.ts}/reactions/thumbsup`);
    expect(put.status).toBe(201);
    expect(put.body).toEqual({ channel_id: ch, ts: m.ts, emoji: 'thumbsup', by: bob.identityId });
    expect((await bob.put(`/channels/${ch}/messages/${m.ts}/reactions/thumbsup`)).status).toBe(200);
    expect((await a.ownerApi.put(`/channels/${ch}/messages/${m.ts}/reactions/thumbsup`)).status).toBe(201);
    expect((await a.ownerApi.put(`/channels/${ch}/messages/${m.ts}/reactions/+1`)).status).toBe(201);
    let list = await a.ownerApi.get(`/channels/${ch}/messages`);
    expect(list.body.data[0].reactions).toEqual([
      { emoji: 'thumbsup', count: 2, by: [bob.identityId, a.owner.identityId] },
      { emoji: '+1', count: 1, by: [a.owner.identityId] },
    ]);
    expect((await bob.del(`/channels/${ch}/messages/${m.ts}/reactions/thumbsup`)).status).toBe(204);
    expect((await bob.del(`/channels/${ch}/messages/${m.ts}/reactions/thumbsup`)).status).toBe(204);
    list = await a.ownerApi.get(`/channels/${ch}/messages`);
    expect(list.body.data[0].reactions[0]).toEqual({ emoji: 'thumbsup', count: 1, by: [a.owner.identityId] });
    const bad = await bob.put(`/channels/${ch}/messages/${m.ts}/reactions/Not%20An%20Emoji`);
    expect(bad.status).toBe(400);
    expect((await bob.put(`/channels/${ch}/messages/1000000000.000001/reactions/ok`)).status).toBe(404);
  });

  test('Decision "Edits": edit with current If-Match or body version bumps version; a stale one is 409 edit_conflict', async () => {
    const a = await messagingAccount(h);
    const ch = await makeChannel(a.ownerApi);
    const m = await post(a.ownerApi, ch, { text: 'v1' });
    const e1 = await a.ownerApi.patch(`/channels/${ch}/messages/${m.ts}`, { text: 'v2' }).set('If-Match', '"1"');
    expect(e1.status).toBe(200);
    expect(e1.body).toMatchObject({ text: 'v2', version: 2 });
    expect(e1.body.edited_at).not.toBeNull();
    expect(e1.headers.etag).toBe('"2"');
    const staleHeader = await a.ownerApi.patch(`/channels/${ch}/messages/${m.ts}`, { text: 'lost' }).set('If-Match', '"1"');
    expect(staleHeader.status).toBe(409);
    expect(staleHeader.body.error).toMatchObject({ code: 'edit_conflict', current_version: 2 });
    const staleBody = await a.ownerApi.patch(`/channels/${ch}/messages/${m.ts}`, { text: 'lost', version: 1 });
    expect(staleBody.status).toBe(409);
    expect(staleBody.body.error.code).toBe('edit_conflict');
    const e2 = await a.ownerApi.patch(`/channels/${ch}/messages/${m.ts}`, { text: 'v3', version: 2 });
    expect(e2.status).toBe(200);
    expect(e2.body.version).toBe(3);
    const list = await a.ownerApi.get(`/channels/${ch}/messages`);
    expect(list.body.data[0]).toMatchObject({ text: 'v3', version: 3 });
  });

  test('Decision "Edits": two concurrent edits from the same version: one wins, the other gets 409 edit_conflict', async () => {
    const a = await messagingAccount(h);
    const ch = await makeChannel(a.ownerApi);
    const m = await post(a.ownerApi, ch, { text: 'base' });
    const [x, y] = await Promise.all(['from x', 'from y'].map((text) =>
      a.ownerApi.patch(`/channels/${ch}/messages/${m.ts}`, { text }).set('If-Match', '"1"')));
    expect([x.status, y.status].sort()).toEqual([200, 409]);
    const winner = x.status === 200 ? x : y;
    const list = await a.ownerApi.get(`/channels/${ch}/messages`);
    expect(list.body.data[0]).toMatchObject({ text: winner.body.text, version: 2 });
  });

  test('threads: deleting a root (web session) leaves its replies readable; deleting a reply lowers reply_count', async () => {
    const a = await messagingAccount(h);
    const ch = await makeChannel(a.ownerApi);
    const root = await post(a.ownerApi, ch, { text: 'root' });
    const r1 = await post(a.ownerApi, ch, { text: 'r1', thread_ts: root.ts });
    await post(a.ownerApi, ch, { text: 'r2', thread_ts: root.ts });
    const { agent, csrf } = await signInWeb(h, a.owner.email);
    const base = `/accounts/${a.accountId}/channels/${ch}`;
    await agent.delete(`${base}/messages/${r1.ts}`).set('X-CSRF-Token', csrf).expect(204);
    expect((await a.ownerApi.get(`/channels/${ch}/threads/${root.ts}`)).body.data.map((m: { text: string; reply_count: number }) => [m.text, m.reply_count]))
      .toEqual([['root', 1], ['r2', 0]]);
    await agent.delete(`${base}/messages/${root.ts}`).set('X-CSRF-Token', csrf).expect(204);
    expect((await a.ownerApi.get(`/channels/${ch}/threads/${root.ts}`)).body.data.map((m: { text: string }) => m.text)).toEqual(['r2']);
    expect((await a.ownerApi.get(`/channels/${ch}/messages`)).body.data).toEqual([]);
  });

  test('Decision "Edits": an edit by someone else is refused (403 forbidden); an admin may edit', async () => {
    const a = await messagingAccount(h);
    const bob = await memberCaller(h, a.accountId);
    const admin = await memberCaller(h, a.accountId, 'admin');
    const ch = await makeChannel(a.ownerApi);
    await addToChannel(a.ownerApi, ch, bob.identityId);
    await addToChannel(a.ownerApi, ch, admin.identityId);
    const m = await post(bob, ch, { text: 'bob wrote this' });
    const other = await memberCaller(h, a.accountId);
    await addToChannel(a.ownerApi, ch, other.identityId);
    const refused = await other.patch(`/channels/${ch}/messages/${m.ts}`, { text: 'hijack' });
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('forbidden');
    const byAdmin = await admin.patch(`/channels/${ch}/messages/${m.ts}`, { text: 'moderated' });
    expect(byAdmin.status).toBe(200);
    const byAuthor = await bob.patch(`/channels/${ch}/messages/${m.ts}`, { text: 'fixed', version: 2 });
    expect(byAuthor.status).toBe(200);
  });

  test('Limits on content: text, attachments, links, ts and emoji formats answer 400 invalid_request', async () => {
    const a = await messagingAccount(h);
    const ch = await makeChannel(a.ownerApi);
    const bad = [
      {},
      { text: '   ' },
      { text: 'x'.repeat(16 * 1024 + 1) },
      { text: 'é'.repeat(8 * 1024 + 1) }, // 16 386 bytes in UTF-8
      { text: 'x', attachments: Array.from({ length: 11 }, () => ({ url: 'https://e.com/a' })) },
      { text: 'x', attachments: [{ title: 'no url nor file' }] },
      { text: 'x', links: ['javascript:alert(1)'] },
      { text: 'x', links: Array.from({ length: 21 }, () => 'https://e.com') },
      { text: 'x', thread_ts: 'yesterday' },
      { text: 'x', client_ref: 'r'.repeat(129) },
      { text: 42 },
    ];
    for (const body of bad) {
      const res = await a.ownerApi.post(`/channels/${ch}/messages`, body);
      expect({ body: JSON.stringify(body).slice(0, 60), status: res.status, code: res.body.error?.code })
        .toEqual({ body: JSON.stringify(body).slice(0, 60), status: 400, code: 'invalid_request' });
    }
    expect((await a.ownerApi.post(`/channels/${ch}/messages`, { text: 'x'.repeat(16 * 1024) })).status).toBe(201);
    expect((await a.ownerApi.post(`/channels/${ch}/messages`, { attachments: [{ url: 'https://example.com/f' }] })).status).toBe(201);
    // a file attachment names a ready file the poster may see (files.test.ts); an unknown one is refused
    expect((await a.ownerApi.post(`/channels/${ch}/messages`, { attachments: [{ file_id: 'f_1' }] })).body.error)
      .toMatchObject({ code: 'invalid_request', field: 'attachments.0.file_id' });
    expect((await a.ownerApi.get(`/channels/${ch}/threads/notats`)).status).toBe(400);
    const m = await post(a.ownerApi, ch, { text: 'x' });
    expect((await a.ownerApi.patch(`/channels/${ch}/messages/${m.ts}`, {})).status).toBe(400);
    expect((await a.ownerApi.patch(`/channels/${ch}/messages/${m.ts}`, { text: '' })).status).toBe(400);
    expect((await a.ownerApi.patch(`/channels/${ch}/messages/not-a-ts`, { text: 'y' })).status).toBe(400);
    expect((await a.ownerApi.get(`/channels/${ch}/messages?limit=0`)).status).toBe(400);
  });

  test('Limits rule 4: the same Idempotency-Key twice posts one message (one event); another body is 409', async () => {
    const a = await messagingAccount(h);
    const ch = await makeChannel(a.ownerApi);
    const key = randomUUID();
    const send = (text: string) => a.ownerApi.post(`/channels/${ch}/messages`, { text }).set('Idempotency-Key', key);
    const [r1, r2] = await Promise.all([send('once'), send('once')]);
    expect([r1.status, r2.status]).toEqual([201, 201]);
    expect(r1.body.ts).toBe(r2.body.ts);
    expect([r1.headers['idempotent-replayed'], r2.headers['idempotent-replayed']].filter(Boolean)).toEqual(['true']);
    const r3 = await send('once');
    expect(r3.body.ts).toBe(r1.body.ts);
    expect(r3.headers.etag).toBe('"1"');
    const list = await a.ownerApi.get(`/channels/${ch}/messages`);
    expect(list.body.data).toHaveLength(1);
    expect(byType(await eventsOf(h, a.accountId), 'message.posted')).toHaveLength(1);
    const other = await send('different');
    expect(other.status).toBe(409);
    expect(other.body.error.code).toBe('idempotency_conflict');
  });

  test('Common conventions (cursor): paging back through a channel while others post skips and repeats nothing', async () => {
    const a = await messagingAccount(h);
    const bob = await memberCaller(h, a.accountId);
    const ch = await makeChannel(a.ownerApi);
    await addToChannel(a.ownerApi, ch, bob.identityId);
    const initial: string[] = [];
    for (let i = 0; i < 25; i++) initial.push((await post(a.ownerApi, ch, { text: `old-${i}` })).ts);
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      // Others keep posting between (and during) page reads.
      const concurrent = Promise.all([post(bob, ch, { text: `new-${pages}-a` }), post(bob, ch, { text: `new-${pages}-b` })]);
      const res = await a.ownerApi.get(`/channels/${ch}/messages?limit=4${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      await concurrent;
      expect(res.status).toBe(200);
      seen.push(...res.body.data.map((m: { ts: string }) => m.ts));
      cursor = res.body.next_cursor;
      pages += 1;
    } while (cursor && pages < 50);
    expect(new Set(seen).size).toBe(seen.length); // nothing repeated
    for (const ts of initial) expect(seen).toContain(ts); // nothing that existed is skipped
    for (let i = 1; i < seen.length; i++) expect(micros(seen[i - 1]) > micros(seen[i])).toBe(true);
    // The cursor is bound to this list and this caller.
    const p1 = await a.ownerApi.get(`/channels/${ch}/messages?limit=1`);
    const foreign = await bob.get(`/channels/${ch}/messages?cursor=${encodeURIComponent(p1.body.next_cursor)}`);
    expect(foreign.status).toBe(400);
    expect(foreign.body.error.code).toBe('invalid_cursor');
  });

  test('Decision "Membership": posting in a channel needs membership; unknown channel is 404', async () => {
    const a = await messagingAccount(h);
    const ch = await makeChannel(a.ownerApi);
    const m = await post(a.ownerApi, ch, { text: 'members only' });
    const admin = await memberCaller(h, a.accountId, 'admin');
    // Even an admin must join to read or write messages.
    for (const res of [
      await admin.get(`/channels/${ch}/messages`),
      await admin.get(`/channels/${ch}/threads/${m.ts}`),
      await admin.patch(`/channels/${ch}/messages/${m.ts}`, { text: 'x' }),
      await admin.put(`/channels/${ch}/messages/${m.ts}/reactions/eyes`),
      await admin.del(`/channels/${ch}/messages/${m.ts}`),
    ]) {
      expect(res.status).toBe(403);
      expect(res.body.error.code).toBe('not_a_member');
    }
    expect((await a.ownerApi.post('/channels/ch_unknown/messages', { text: 'x' })).status).toBe(404);
  });
});
