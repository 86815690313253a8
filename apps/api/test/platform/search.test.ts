import request from 'supertest';
import { HIGHLIGHT_END as E, HIGHLIGHT_START as S } from '@teamchat/core';
import { sql, withUnboundedDatabase } from '@teamchat/db';
import { addPerson, bearer, newAccount, newKey, signInWeb, startHarness, type Harness } from '../../../../test/support/harness';

let h: Harness;
beforeAll(async () => { h = await startHarness(); });
afterAll(async () => { await h.close(); });

type Hit = { text: string; channel_id: string; author: string; ts: string; highlight: string };
const texts = (body: { data: Hit[] }) => body.data.map((m) => m.text);

describe('Authentication rule 9: endpoints marked web session only refuse credentials', () => {
  test('GET /search with an API key or agent token → 403 forbidden, reason web_session_required', async () => {
    const a = await newAccount(h);
    const key = await newKey(h, a.accountId, a.owner.email, ['search:manage']);
    const res = await request(h.api).get(`/accounts/${a.accountId}/search?q=x`).set(bearer(key));
    expect(res.status).toBe(403);
    expect(res.body.error).toMatchObject({ code: 'forbidden', reason: 'web_session_required' });
  });
});

/** An account with two people, a shared channel, one channel each, a DM; messages posted in order. */
async function corpus() {
  const a = await newAccount(h);
  const other = await addPerson(h, a.accountId, 'member');
  const ownerKey = await newKey(h, a.accountId, a.owner.email, []);
  const otherKey = await newKey(h, a.accountId, other.email, []);
  const api = (key: string) => ({
    post: (p: string, body: object) => request(h.api).post(`/accounts/${a.accountId}${p}`).set(bearer(key)).send(body),
  });
  const mine = (await api(ownerKey).post('/channels', { name: 'mine' })).body.id as string;
  const shared = (await api(ownerKey).post('/channels', { name: 'shared' })).body.id as string;
  await api(ownerKey).post(`/channels/${shared}/members`, { identity_id: other.identity_id });
  const theirs = (await api(otherKey).post('/channels', { name: 'theirs' })).body.id as string;
  const dm = (await api(otherKey).post('/dms', { members: [a.owner.identityId] })).body.id as string;
  const say = async (key: string, channel: string, text: string) => {
    const r = await api(key).post(`/channels/${channel}/messages`, { text });
    expect(r.status).toBe(201);
    return r.body as { ts: string; created_at: string };
  };
  const web = await signInWeb(h, a.owner.email);
  const search = (query: Record<string, string | number>) => web.agent.get(`/accounts/${a.accountId}/search`).query(query);
  return { a, other, ownerKey, otherKey, mine, shared, theirs, dm, say, search };
}

describe('GET /accounts/{id}/search (web session): full-text search over the messages the person can read', () => {
  test('scoping: channels and DMs the caller is a member of, never another channel or account; the channel filter cannot widen it', async () => {
    const c = await corpus();
    await c.say(c.ownerKey, c.mine, 'deploy in mine');
    await c.say(c.otherKey, c.shared, 'deploy in shared');
    await c.say(c.otherKey, c.theirs, 'deploy in theirs');
    await c.say(c.otherKey, c.dm, 'deploy in the dm');
    const b = await newAccount(h);
    const bKey = await newKey(h, b.accountId, b.owner.email, []);
    const bch = (await request(h.api).post(`/accounts/${b.accountId}/channels`).set(bearer(bKey)).send({ name: 'x' })).body.id;
    await request(h.api).post(`/accounts/${b.accountId}/channels/${bch}/messages`).set(bearer(bKey)).send({ text: 'deploy elsewhere' });

    const all = await c.search({ q: 'deploy', sort: 'newest' });
    expect(all.status).toBe(200);
    expect(texts(all.body)).toEqual(['deploy in the dm', 'deploy in shared', 'deploy in mine']);
    expect(texts((await c.search({ q: 'deploy', channel: c.theirs })).body)).toEqual([]);
    expect(texts((await c.search({ q: 'deploy', channel: bch })).body)).toEqual([]);
    expect(texts((await c.search({ q: 'deploy', channel: c.dm })).body)).toEqual(['deploy in the dm']);
  });

  test('websearch syntax: words in any order, "phrases", OR, -word; any input is valid; case-insensitive; no stemming or stop words', async () => {
    const c = await corpus();
    await c.say(c.ownerKey, c.mine, 'The release train leaves Friday');
    await c.say(c.ownerKey, c.mine, 'Friday release of the train set');
    await c.say(c.ownerKey, c.mine, 'lunch on friday?');
    await c.say(c.ownerKey, c.mine, 'Größenordnung der Straße: ÉTÉ à Paris');
    await c.say(c.ownerKey, c.mine, 'releases are weekly');
    const q = async (query: string) => texts((await c.search({ q: query, sort: 'newest' })).body).sort();
    expect(await q('friday release')).toEqual(['Friday release of the train set', 'The release train leaves Friday']);
    expect(await q('"release train"')).toEqual(['The release train leaves Friday']);
    expect(await q('lunch OR train')).toEqual(['Friday release of the train set', 'The release train leaves Friday', 'lunch on friday?']);
    expect(await q('friday -train')).toEqual(['lunch on friday?']);
    expect(await q('FRIDAY -release -lunch')).toEqual([]);
    expect(await q('straße')).toEqual(['Größenordnung der Straße: ÉTÉ à Paris']);
    expect(await q('été')).toEqual(['Größenordnung der Straße: ÉTÉ à Paris']);
    expect(await q('the')).toContain('The release train leaves Friday'); // no stop words
    // 'release' is a substring of 'releases' (trigram match), not a stem of it
    expect(await q('release')).toContain('releases are weekly');
    expect(await q('rel')).toContain('releases are weekly');
    // a two-character query matches whole words only (the trigram index needs three)
    expect(await q('ea')).toEqual([]);
    // only excluded words: nothing (it would match almost everything)
    expect(await q('-friday')).toEqual([]);
    for (const odd of ['"unclosed', '&|!:*()', '\'', '\\', 'a:*', '-', '""', '((((', 'OR', '!!!release']) {
      const res = await c.search({ q: odd });
      expect({ odd, status: res.status }).toEqual({ odd, status: 200 });
    }
  });

  test('identifiers, URLs, e-mail addresses and parts of words match through the trigram index; regex and LIKE characters are literal', async () => {
    const c = await corpus();
    await c.say(c.ownerKey, c.mine, 'see https://git.example.com/org/repo/pull/42 please');
    await c.say(c.ownerKey, c.mine, 'mail ops-team@example.org about it');
    await c.say(c.ownerKey, c.mine, 'rename fetch_user_profile_v2 to something');
    await c.say(c.ownerKey, c.mine, '100% done_now (a.b*c)');
    await c.say(c.ownerKey, c.mine, '1000 done');
    const q = async (query: string) => texts((await c.search({ q: query })).body);
    expect(await q('repo/pull/42')).toEqual(['see https://git.example.com/org/repo/pull/42 please']);
    expect(await q('ops-team@example.org')).toEqual(['mail ops-team@example.org about it']);
    expect(await q('example.org')).toEqual(['mail ops-team@example.org about it']);
    expect(await q('user_profile')).toEqual(['rename fetch_user_profile_v2 to something']);
    expect(await q('PROFILE_V')).toEqual(['rename fetch_user_profile_v2 to something']);
    expect(await q('100%')).toEqual(['100% done_now (a.b*c)']);
    expect(await q('(a.b*c)')).toEqual(['100% done_now (a.b*c)']);
    expect(await q('a.b.c')).toEqual([]);
  });

  test('sort=relevance (default): ts_rank_cd, ties newest; sort=newest; paged with cursors tied to query, filters and sort', async () => {
    const c = await corpus();
    const t1 = await c.say(c.ownerKey, c.mine, 'incident: database down, database failover, database back');
    await c.say(c.ownerKey, c.mine, 'the database is fine');
    await c.say(c.ownerKey, c.mine, 'database');
    await c.say(c.ownerKey, c.mine, 'unrelated');
    const rel = await c.search({ q: 'database' });
    expect(texts(rel.body)).toEqual([
      'incident: database down, database failover, database back', // three occurrences
      'database', // equal rank to the next one: newest first
      'the database is fine',
    ]);
    const newest = await c.search({ q: 'database', sort: 'newest' });
    expect(texts(newest.body)).toEqual(['database', 'the database is fine', 'incident: database down, database failover, database back']);

    const pages: string[] = [];
    let cursor: string | null = null;
    do {
      const res: request.Response = await c.search(cursor ? { q: 'database', limit: 1, cursor } : { q: 'database', limit: 1 });
      expect(res.status).toBe(200);
      pages.push(...texts(res.body));
      cursor = res.body.next_cursor;
    } while (cursor);
    expect(pages).toEqual(texts(rel.body));

    const first = await c.search({ q: 'database', limit: 1 });
    const others: Array<Record<string, string>> = [{ q: 'incident' }, { q: 'database', sort: 'newest' }, { q: 'database', channel: c.mine }, { q: 'database', after: t1.created_at }];
    for (const other of others) {
      const res = await c.search({ ...other, limit: 1, cursor: first.body.next_cursor });
      expect({ other, code: res.body.error?.code }).toEqual({ other, code: 'invalid_cursor' });
    }
    expect((await c.search({ q: 'x', sort: 'oldest' })).body.error).toMatchObject({ code: 'invalid_request', field: 'sort' });
    expect((await c.search({})).body.error).toMatchObject({ code: 'invalid_request', field: 'q' });
  });

  test('filters: from, after, before, channel', async () => {
    const c = await corpus();
    const first = await c.say(c.ownerKey, c.shared, 'standup notes one');
    await new Promise((r) => setTimeout(r, 5));
    const second = await c.say(c.otherKey, c.shared, 'standup notes two');
    await new Promise((r) => setTimeout(r, 5));
    await c.say(c.ownerKey, c.mine, 'standup notes three');
    expect(texts((await c.search({ q: 'standup', from: c.other.identity_id })).body)).toEqual(['standup notes two']);
    // after/before compare with the message's ts (µs); an ISO date has ms: the ms just after `first`, and the ms of `second`
    const micros = (ts: string) => Number(ts.split('.')[0]) * 1_000_000 + Number(ts.split('.')[1]);
    const afterFirst = new Date(Math.floor(micros(first.ts) / 1000) + 1).toISOString();
    const atSecond = new Date(Math.floor(micros(second.ts) / 1000)).toISOString();
    expect(texts((await c.search({ q: 'standup', sort: 'newest', after: afterFirst })).body)).toEqual(['standup notes three', 'standup notes two']);
    expect(texts((await c.search({ q: 'standup', before: atSecond })).body)).toEqual(['standup notes one']);
    expect(texts((await c.search({ q: 'standup', sort: 'newest', channel: c.shared })).body)).toEqual(['standup notes two', 'standup notes one']);
    for (const [name, value] of [['after', 'yesterday'], ['from', 'usr_x'], ['channel', 'general']]) {
      expect((await c.search({ q: 'x', [name]: value })).body.error).toMatchObject({ code: 'invalid_request', field: name });
    }
  });

  test('highlight: the neighbourhood of the first match, matches wrapped in U+E000 … U+E001 (markers in the text removed)', async () => {
    const c = await corpus();
    const long = `${'lorem ipsum '.repeat(30)}the Deploy failed on deploy-7 \uE000x\uE001 ${'dolor sit '.repeat(40)}`;
    await c.say(c.ownerKey, c.mine, long);
    await c.say(c.ownerKey, c.mine, 'short deploy note');
    const res = await c.search({ q: 'deploy -nothing', sort: 'newest' });
    const [short, big] = res.body.data as Hit[];
    expect(short.highlight).toBe(`short ${S}deploy${E} note`);
    expect(big.highlight.startsWith('…')).toBe(true);
    expect(big.highlight.endsWith('…')).toBe(true);
    expect(big.highlight).toContain(`the ${S}Deploy${E} failed on ${S}deploy${E}-7 x dolor`);
    expect(big.highlight.length).toBeLessThanOrEqual(260);
    expect(big.text).toBe(long); // the message itself as posted
    const phrase = await c.search({ q: '"failed on"' });
    expect((phrase.body.data as Hit[])[0].highlight).toContain(`${S}failed on${E}`);
  });
});

describe('A worst-case query answers promptly', () => {
  test('3,000 messages of 16 KB crafted to pass the trigram index, queried with 199 × "a" then "b": answers within the request bound (5 s)', async () => {
    const c = await corpus();
    // seeded by SQL (posting 48 MB through the API would only test the post path)
    // (set-up, not a request: indexing 48 MB of text takes longer than the request bound under load)
    await withUnboundedDatabase(h.deps.config.databaseUrl, (db) => db.execute(sql`
      INSERT INTO messages (channel_id, ts_micros, account_id, author_identity_id, text)
      SELECT ${c.mine}, g, ${c.a.accountId}, ${c.a.owner.identityId}, repeat('a', 16383) || 'b' FROM generate_series(1, 3000) g`));
    await h.deps.database.db.execute(sql`ANALYZE messages`);
    for (const sort of ['relevance', 'newest']) {
      const started = Date.now();
      const res = await c.search({ q: `${'a'.repeat(199)}b`, sort, limit: 5 });
      expect(res.status).toBe(200);
      expect(res.body.data).toHaveLength(5);
      expect(Date.now() - started).toBeLessThan(5000);
    }
  }, 120_000);
});
