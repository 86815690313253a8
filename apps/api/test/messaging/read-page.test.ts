/**
 * The read path (docs/performance.md): GET .../channels/{id}/messages is ONE statement after authentication
 * (channel, membership, the page and its reactions), and answers exactly what the former
 * builder queries answered (spec: Endpoints / Messages; docs/api.md Messaging, Resources).
 */
import { and, createDatabase, definedStatements, desc, eq, isNull, messages, sql } from '@teamchat/db';
import { reactionsOf, toMessageView, type MessageRow } from '@teamchat/core';
import { byKeyPlanProblems } from '../../../../test/support/by-key-plans';
import { createMigratedDatabase, dropDatabase } from '../../../../test/support/databases';
import { startHarness, type Harness } from '../../../../test/support/harness';
import { addToChannel, makeChannel, memberCaller, messagingAccount, post } from '../../../../test/support/messaging';
import { queriesDuring } from '../../../../test/support/round-trips';

let h: Harness;
beforeAll(async () => { h = await startHarness({ limitsEnabled: false }); });
afterAll(async () => { await h.close(); });

/** The page as the builder queries read it before the one-statement page (the reference). */
async function referencePage(channelId: string, limit: number) {
  const rows: MessageRow[] = await h.deps.database.db.select().from(messages)
    .where(and(eq(messages.channelId, channelId), isNull(messages.threadTsMicros)))
    .orderBy(desc(messages.tsMicros)).limit(limit);
  const map = await reactionsOf(h.deps.database.db, channelId, rows.map((r) => r.tsMicros));
  return JSON.parse(JSON.stringify(rows.map((r) => toMessageView(r, map.get(r.tsMicros) ?? []))));
}

test('the one-statement page equals the builder page, field for field (reactions, threads, edits, attachments, session)', async () => {
  const a = await messagingAccount(h);
  const bob = await memberCaller(h, a.accountId);
  const ch = await makeChannel(a.ownerApi);
  await addToChannel(a.ownerApi, ch, bob.identityId);
  const root = await post(a.ownerApi, ch, { text: `hello <@${bob.identityId}>`, attachments: [{ title: 'a', url: 'https://example.com/a' }], links: ['https://example.com'] });
  await post(bob, ch, { text: 'a reply', thread_ts: root.ts });
  const edited = await post(bob, ch, { text: 'to be edited <!here>' });
  expect((await bob.patch(`/channels/${ch}/messages/${edited.ts}`, { text: 'edited' })).status).toBe(200);
  for (let i = 0; i < 5; i += 1) await post(a.ownerApi, ch, { text: `plain ${i}`, client_ref: `cr-${i}` });
  // The page's JSON is PostgreSQL's, not JSON.stringify's: text that needs escaping comes back exactly.
  const awkward = 'say "hi" \\ back\\slash\nnew line\ttab 🎉 </script> \u2028 é {"not": "json"}';
  const escaped = await post(a.ownerApi, ch, { text: awkward, client_ref: 'quote " and \\ slash' });
  // reactions: two emoji on the root in a known order, two people on one of them
  expect((await bob.put(`/channels/${ch}/messages/${root.ts}/reactions/tada`)).status).toBe(201);
  expect((await a.ownerApi.put(`/channels/${ch}/messages/${root.ts}/reactions/eyes`)).status).toBe(201);
  expect((await a.ownerApi.put(`/channels/${ch}/messages/${root.ts}/reactions/tada`)).status).toBe(201);
  await h.deps.database.db.execute(sql`UPDATE messages SET session = '{"client":"claude","version":"1.2"}' WHERE channel_id = ${ch} AND ts_micros = ${BigInt(root.ts.replace('.', '')).toString()}::bigint`);

  const res = await a.ownerApi.get(`/channels/${ch}/messages?limit=50`);
  expect(res.status).toBe(200);
  expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
  const reference = await referencePage(ch, 50);
  expect(res.body.data).toEqual(reference);
  // The page is written from PostgreSQL's JSON text (list-messages.ts): the same fields in the
  // same order as messageView writes them, reactions included.
  expect(res.body.data.map((m: object) => Object.keys(m))).toEqual(reference.map((m: object) => Object.keys(m)));
  const reactionKeys = (page: Array<{ reactions: object[] }>) => page.flatMap((m) => m.reactions.map((r) => Object.keys(r)));
  expect(reactionKeys(res.body.data)).toEqual(reactionKeys(reference));
  expect(reactionKeys(res.body.data)).toHaveLength(2);
  const rootView = res.body.data.find((m: { ts: string }) => m.ts === root.ts);
  expect(rootView.reactions).toEqual([
    { emoji: 'tada', count: 2, by: [bob.identityId, a.owner.identityId] },
    { emoji: 'eyes', count: 1, by: [a.owner.identityId] },
  ]);
  expect(rootView).toMatchObject({ reply_count: 1, session: { client: 'claude', version: '1.2' }, mentions: [bob.identityId] });
  expect(res.body.data.find((m: { ts: string }) => m.ts === escaped.ts)).toMatchObject({ text: awkward, client_ref: 'quote " and \\ slash' });

  // paging: pages of 3 concatenate to the whole list, no repeats
  const seen: string[] = [];
  let cursor: string | null = null;
  do {
    const page = await a.ownerApi.get(`/channels/${ch}/messages?limit=3${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    expect(page.status).toBe(200);
    seen.push(...page.body.data.map((m: { ts: string }) => m.ts));
    cursor = page.body.next_cursor;
  } while (cursor);
  expect(seen).toEqual(res.body.data.map((m: { ts: string }) => m.ts));
});

test('next_cursor only when an older thread root exists: none on a page that ends exactly at the last root, none for replies beyond it', async () => {
  const a = await messagingAccount(h);
  const ch = await makeChannel(a.ownerApi);
  const oldest = await post(a.ownerApi, ch, { text: 'oldest root' });
  const roots = [oldest];
  for (let i = 0; i < 2; i += 1) roots.push(await post(a.ownerApi, ch, { text: `root ${i}` }));
  // a reply is newer than every root but is no root of the page (read through its thread)
  await post(a.ownerApi, ch, { text: 'a late reply', thread_ts: oldest.ts });
  const whole = await a.ownerApi.get(`/channels/${ch}/messages?limit=3`);
  expect(whole.body.data.map((m: { ts: string }) => m.ts)).toEqual(roots.map((m) => m.ts).reverse());
  expect(whole.body.next_cursor).toBeNull();
  const first = await a.ownerApi.get(`/channels/${ch}/messages?limit=2`);
  expect(first.body.data).toHaveLength(2);
  expect(typeof first.body.next_cursor).toBe('string');
  const last = await a.ownerApi.get(`/channels/${ch}/messages?limit=2&cursor=${encodeURIComponent(first.body.next_cursor)}`);
  expect(last.body).toEqual({ data: [whole.body.data[2]], next_cursor: null });
  expect(last.body.data[0].reply_count).toBe(1);
});

test('a page costs TWO queries in all (authentication + the page), ONE once the authentication is remembered; access rules unchanged', async () => {
  const a = await messagingAccount(h);
  const ch = await makeChannel(a.ownerApi);
  const reader = await memberCaller(h, a.accountId);
  await addToChannel(a.ownerApi, ch, reader.identityId);
  await post(a.ownerApi, ch, { text: 'x' });
  await reader.get('/channels'); // a key's first use stamps last_used_at (once a minute)
  const first = await queriesDuring(async () => expect((await reader.get(`/channels/${ch}/messages`)).status).toBe(200));
  expect(first).toEqual(['auth_credential', 'messages_page']);
  // Authenticated from memory, confirmed by the page statement (platform/remembered-auth.test.ts).
  const next = await queriesDuring(async () => expect((await reader.get(`/channels/${ch}/messages`)).status).toBe(200));
  expect(next).toEqual(['messages_page']);

  // spec Authentication 7: not a member → 403 not_a_member (owners and admins too); a DM not yours or no channel → 404
  const outsider = await memberCaller(h, a.accountId, 'admin');
  expect((await outsider.get(`/channels/${ch}/messages`)).body.error.code).toBe('not_a_member');
  expect((await outsider.get('/channels/ch_nope/messages')).status).toBe(404);
  const dm = await a.ownerApi.post('/dms', { members: [(await memberCaller(h, a.accountId)).identityId] });
  expect((await outsider.get(`/channels/${dm.body.id}/messages`)).status).toBe(404);
  // an empty channel is an empty page
  const empty = await makeChannel(a.ownerApi);
  expect((await a.ownerApi.get(`/channels/${empty}/messages`)).body).toEqual({ data: [], next_cursor: null });
});

test('the page statement is by key: one generic plan on the by-key pool, every table reached by its key on an empty database', async () => {
  const page = definedStatements().find((st) => st.name === 'messages_page')!;
  expect(page.byKey).toBe(true);
  const made = await createMigratedDatabase('read_page_plan');
  const database = createDatabase(made.url, { max: 1, byKeyPool: true, application_name: 'read_page_plan' });
  try {
    const client = await database.byKeyPool!.connect();
    try {
      expect(await byKeyPlanProblems(client, [page])).toEqual([]);
    } finally {
      client.release();
    }
  } finally {
    await database.close();
    await dropDatabase(made.name);
  }
});
