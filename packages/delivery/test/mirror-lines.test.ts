import { asc, eq, mirrorLines, mirrors } from '@teamchat/db';
import { newId } from '@teamchat/core';
import { fanOutEvent, planFanOut, writeFanOut } from '../src';
import { createMigratedDatabase, dropDatabase } from '../../../test/support/databases';
import { addPerson, type Harness } from '../../../test/support/harness';
import { makeChannel, messagingAccount, post, eventsOf } from '../../../test/support/messaging';
import { startWebhookHarness } from '../../../test/support/webhooks';

/**
 * docs/mirrors.md "Which messages are mirrored": the fan-out write queues one line per
 * message.posted and matching mirror, once however many fan-outs run; only enabled mirrors,
 * covering the channel, enabled before the post, whose creator is a member. No engine runs here
 * (a database of its own, so no other file's worker relays these events).
 */
let db: { name: string; url: string };
let h: Harness;
beforeAll(async () => {
  db = await createMigratedDatabase('teamchat_mirrorlines');
  h = await startWebhookHarness({ databaseUrl: db.url });
});
afterAll(async () => {
  await h.close();
  await dropDatabase(db.name);
});

async function mirrorRow(accountId: string, userId: string, channelIds: string[], extra: Partial<typeof mirrors.$inferInsert> = {}) {
  const id = newId('mirror');
  await h.deps.database.db.insert(mirrors).values({
    id, accountId, createdByUserId: userId, url: 'https://localhost:1/m', channelIds, format: 'slack', enabled: true, enabledAt: new Date(Date.now() - 1000), ...extra,
  });
  return id;
}

const linesOf = (mirrorId: string) => h.deps.database.db.select().from(mirrorLines).where(eq(mirrorLines.mirrorId, mirrorId)).orderBy(asc(mirrorLines.seq));

test('one line per message.posted and mirror, written once by concurrent fan-outs, with channel, author, text and reply flag', async () => {
  const a = await messagingAccount(h);
  const ch = await makeChannel(a.ownerApi, 'mirrored-room');
  const m = await mirrorRow(a.accountId, a.owner.userId, [ch]);
  const root = await post(a.ownerApi, ch, { text: 'root @here' });
  await post(a.ownerApi, ch, { text: 'reply', thread_ts: root.ts });
  const posted = (await eventsOf(h, a.accountId)).filter((e) => e.type === 'message.posted');
  expect(posted).toHaveLength(2);
  await Promise.all(posted.flatMap((e) => Array.from({ length: 4 }, () => fanOutEvent(h.deps, e.id))));
  // The two events' fan-outs run at once, so their lines' order (seq) is whichever wrote first.
  const lines = (await linesOf(m)).sort((x, y) => Number(x.isReply) - Number(y.isReply));
  expect(lines.map((l) => [l.channelName, l.text, l.isReply])).toEqual([['mirrored-room', 'root @here', false], ['mirrored-room', 'reply', true]]);
  expect(lines[0].authorName).toEqual(expect.any(String));
  expect(lines[0].authorName.length).toBeGreaterThan(0);
});

test('no line for a disabled mirror, one enabled after the post, a channel not covered, or a creator who is not a member', async () => {
  const a = await messagingAccount(h);
  const bob = await addPerson(h, a.accountId, 'admin');
  const ch = await makeChannel(a.ownerApi);
  const other = await makeChannel(a.ownerApi);
  const disabled = await mirrorRow(a.accountId, a.owner.userId, [ch], { enabled: false, disabledReason: 'manual', enabledAt: null });
  const later = await mirrorRow(a.accountId, a.owner.userId, [ch], { enabledAt: new Date(Date.now() + 60_000) });
  const elsewhere = await mirrorRow(a.accountId, a.owner.userId, [other]);
  // written directly: the API refuses a channel its creator is not a member of; the fan-out checks again
  const bobs = await mirrorRow(a.accountId, bob.user_id, [ch]);
  await post(a.ownerApi, ch, { text: 'hello' });
  for (const e of (await eventsOf(h, a.accountId)).filter((x) => x.type === 'message.posted')) await fanOutEvent(h.deps, e.id);
  for (const id of [disabled, later, elsewhere, bobs]) expect(await linesOf(id)).toHaveLength(0);
});

test('the fan-out read marks the events of accounts with an enabled mirror, and their batch writes the lines; others take the write without the mirror part', async () => {
  const withMirror = await messagingAccount(h);
  const withoutMirror = await messagingAccount(h);
  const onlyDisabled = await messagingAccount(h);
  const ch = await makeChannel(withMirror.ownerApi);
  const ch2 = await makeChannel(withoutMirror.ownerApi);
  const ch3 = await makeChannel(onlyDisabled.ownerApi);
  const m = await mirrorRow(withMirror.accountId, withMirror.owner.userId, [ch]);
  await mirrorRow(onlyDisabled.accountId, onlyDisabled.owner.userId, [ch3], { enabled: false, disabledReason: 'manual', enabledAt: null });
  await mirrorRow(onlyDisabled.accountId, onlyDisabled.owner.userId, [ch3], { deletedAt: new Date() });
  await post(withMirror.ownerApi, ch, { text: 'mirrored' });
  await post(withoutMirror.ownerApi, ch2, { text: 'not mirrored' });
  await post(onlyDisabled.ownerApi, ch3, { text: 'not mirrored either' });
  const ids = async (accountId: string) => (await eventsOf(h, accountId)).filter((e) => e.type === 'message.posted').map((e) => e.id);
  const [mine, plain, disabled] = await Promise.all([ids(withMirror.accountId), ids(withoutMirror.accountId), ids(onlyDisabled.accountId)]);
  const plan = async (eventIds: string[]) => planFanOut(h.deps, eventIds);
  expect((await plan(plain)).mirrored).toBe(false);
  expect((await plan(disabled)).mirrored).toBe(false);
  // One batch with events of both kinds of account: the mirrored form, lines only where a mirror takes them.
  const both = await plan([...plain, ...mine]);
  expect(both.mirrored).toBe(true);
  await writeFanOut(h.deps, both);
  expect((await linesOf(m)).map((l) => l.text)).toEqual(['mirrored']);
  expect(await h.deps.database.db.select().from(mirrorLines).where(eq(mirrorLines.accountId, withoutMirror.accountId))).toHaveLength(0);
  // The plain form relays too.
  await writeFanOut(h.deps, await plan(disabled));
  expect((await plan(disabled)).eventIds).toEqual([]);
});
