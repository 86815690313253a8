import { newId, type MirrorFormat } from '@teamchat/core';
import { asc, eq, mirrorDeliveries, mirrorLines, mirrors, notifications } from '@teamchat/db';
import { acquireInFlightSlots, startDeliveryEngine, type DeliveryEngine } from '../src';
import { addPerson, type Harness } from '../../../test/support/harness';
import { startReceiver, type Received, type Receiver } from '../../../test/support/https-receiver';
import { makeChannel, memberCaller, messagingAccount, post, type MessagingAccount } from '../../../test/support/messaging';
import { eventually, startWebhookHarness } from '../../../test/support/webhooks';
import { startSmtpSink, type SmtpSink } from '../../../test/support/smtp-sink';

/**
 * docs/mirrors.md "Sending": posts in covered channels reach a real HTTPS receiver on loopback
 * (throwaway CA) in each format, unsigned and without Authorization; the receiver's pace
 * (429 Retry-After, Discord's retry_after) is honoured without counting as a failure; one
 * message per second per mirror, waiting lines merged; 410 disables and emails owners and admins.
 */
let smtp: SmtpSink;
let h: Harness;
let rx: Receiver;
let worker: DeliveryEngine;
const accountIds: string[] = [];

beforeAll(async () => {
  smtp = await startSmtpSink();
  h = await startWebhookHarness({ ...smtp.config });
  rx = await startReceiver();
  worker = startDeliveryEngine(h.deps, { accountIds, mirrors: { scanMs: 50 } });
});
afterAll(async () => {
  await worker.close();
  await rx.close();
  await h.close();
  await smtp.close();
});

async function setup(format: MirrorFormat) {
  const a: MessagingAccount = await messagingAccount(h);
  accountIds.push(a.accountId);
  const ch = await makeChannel(a.ownerApi, `general-${Math.random().toString(36).slice(2, 8)}`);
  const path = `/mirror-${Math.random().toString(36).slice(2, 10)}`;
  const id = newId('mirror');
  await h.deps.database.db.insert(mirrors).values({
    id, accountId: a.accountId, createdByUserId: a.owner.userId, url: rx.url(path), channelIds: [ch], format,
    enabled: true, enabledAt: new Date(Date.now() - 1000),
  });
  return { a, ch, id, path, mine: (): Received[] => rx.received.filter((r) => r.path === path) };
}

const sendsOf = (mirrorId: string) => h.deps.database.db.select().from(mirrorDeliveries).where(eq(mirrorDeliveries.mirrorId, mirrorId)).orderBy(asc(mirrorDeliveries.seq));
const mirrorRow = async (id: string) => (await h.deps.database.db.select().from(mirrors).where(eq(mirrors.id, id)))[0];

function expectUnsigned(r: Received): void {
  expect(r.headers.authorization).toBeUndefined();
  for (const name of Object.keys(r.headers)) expect(name).not.toMatch(/^(x-service-|webhook-|x-signature|signature)/);
  expect(r.headers['content-type']).toBe('application/json');
}

describe('a mirror delivers posts to a loopback HTTPS receiver', () => {
  test.each([
    ['slack', (b: any) => b.text],
    ['google_chat', (b: any) => b.text],
    ['discord', (b: any) => { expect(b.allowed_mentions).toEqual({ parse: [] }); return b.content; }],
    ['teams', (b: any) => { expect(b.type).toBe('message'); return b.attachments[0].content.body[0].text; }],
  ] as Array<[MirrorFormat, (b: any) => string]>)('%s: channel, author and text; a thread reply; unsigned, no Authorization', async (format, textOf) => {
    const s = await setup(format);
    const root = await post(s.a.ownerApi, s.ch, { text: 'hello @here from the mirror' });
    const [first] = await eventually(async () => (s.mine().length >= 1 ? s.mine() : null), 15_000, 'the first message');
    expectUnsigned(first);
    const text = textOf(JSON.parse(first.body));
    expect(text).toMatch(/general-/);
    expect(text).toContain('hello @\u200Bhere from the mirror');
    await post(s.a.ownerApi, s.ch, { text: 'a reply', thread_ts: root.ts });
    const all = await eventually(async () => (s.mine().length >= 2 ? s.mine() : null), 15_000, 'the reply');
    expect(textOf(JSON.parse(all[1].body))).toContain('(thread reply): a reply');
    // the receiver sees the request before the answer is recorded
    await eventually(async () => (await sendsOf(s.id)).map((d) => d.status).join() === 'delivered,delivered', 5000, 'both recorded delivered');
  });

  test('only covered channels, never DMs; edits and deletes are not mirrored', async () => {
    const s = await setup('slack');
    const bob = await memberCaller(h, s.a.accountId);
    const other = await makeChannel(s.a.ownerApi);
    const dm = await s.a.ownerApi.post('/dms', { members: [bob.identityId] });
    await post(s.a.ownerApi, other, { text: 'not covered' });
    await post(s.a.ownerApi, dm.body.id, { text: 'private' });
    const m = await post(s.a.ownerApi, s.ch, { text: 'covered' });
    await eventually(async () => s.mine().length >= 1, 15_000, 'the covered post');
    const edited = await s.a.ownerApi.patch(`/channels/${s.ch}/messages/${m.ts}`, { text: 'covered, edited' });
    expect(edited.status).toBe(200);
    await new Promise((r) => setTimeout(r, 1500));
    expect(s.mine()).toHaveLength(1);
    expect(s.mine()[0].body).toContain('covered');
    expect(s.mine()[0].body).not.toMatch(/not covered|private|edited/);
  });

  test('at most one message per second per mirror; lines that wait are merged into one message', async () => {
    const s = await setup('slack');
    await post(s.a.ownerApi, s.ch, { text: 'one' });
    await eventually(async () => s.mine().length >= 1, 15_000, 'the first');
    for (const t of ['two', 'three', 'four']) await post(s.a.ownerApi, s.ch, { text: t });
    const got = await eventually(async () => {
      const m = s.mine();
      return m.length >= 2 && m.map((r) => r.body).join('').includes('four') ? m : null;
    }, 15_000, 'the rest');
    for (let i = 1; i < got.length; i++) expect(got[i].at - got[i - 1].at).toBeGreaterThanOrEqual(950);
    // two, three and four waited for the pace: fewer messages than lines
    expect(got.length).toBeLessThan(4);
    const merged = JSON.parse(got[got.length - 1].body).text as string;
    expect(merged.split('\n').length).toBeGreaterThan(1);
  });

  test('429 with Retry-After: the mirror waits that long, and it is not a failure', async () => {
    const s = await setup('slack');
    rx.script({ status: 429, headers: { 'retry-after': '2' } });
    await post(s.a.ownerApi, s.ch, { text: 'paced' });
    const got = await eventually(async () => (s.mine().length >= 2 ? s.mine() : null), 15_000, 'the send after the wait');
    expect(got[1].at - got[0].at).toBeGreaterThanOrEqual(1950);
    expect(got[1].body).toBe(got[0].body);
    const sends = await eventually(async () => {
      const rows = await sendsOf(s.id);
      return rows[0]?.status === 'delivered' ? rows : null;
    }, 5000, 'the send recorded');
    expect(sends).toHaveLength(1);
    expect(sends[0]).toMatchObject({ status: 'delivered', attempt: 1, responseStatus: 200 });
    const row = await mirrorRow(s.id);
    expect(row.failingSince).toBeNull();
    expect(row.lastFailureAt).toBeNull();
  });

  test('Discord 429 with its JSON retry_after (seconds) is honoured', async () => {
    const s = await setup('discord');
    rx.script({ status: 429, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ message: 'You are being rate limited.', retry_after: 1.5, global: false }) });
    await post(s.a.ownerApi, s.ch, { text: 'discord paced' });
    const got = await eventually(async () => (s.mine().length >= 2 ? s.mine() : null), 15_000, 'the send after the wait');
    expect(got[1].at - got[0].at).toBeGreaterThanOrEqual(1450);
    await eventually(async () => (await sendsOf(s.id)).map((d) => d.status).join() === 'delivered', 5000, 'one send, delivered');
  });

  test('a failed send is retried on the webhook schedule, then delivered', async () => {
    const s = await setup('google_chat');
    rx.script({ status: 500 });
    await post(s.a.ownerApi, s.ch, { text: 'retry me' });
    await eventually(async () => s.mine().length >= 2, 15_000, 'the retry');
    const sends = await eventually(async () => {
      const rows = await sendsOf(s.id);
      return rows.length === 2 && rows[1].status === 'delivered' ? rows : null;
    }, 15_000, 'the chain');
    expect(sends[0]).toMatchObject({ status: 'failed', attempt: 1, responseStatus: 500 });
    expect(sends[1]).toMatchObject({ status: 'delivered', attempt: 2, chainId: sends[0].id });
  });

  test('410 Gone disables the mirror (gone), drops what waits, and emails owners and admins', async () => {
    const s = await setup('teams');
    const admin = await addPerson(h, s.a.accountId, 'admin');
    rx.script({ status: 410 });
    await post(s.a.ownerApi, s.ch, { text: 'gone' });
    const row = await eventually(async () => {
      const r = await mirrorRow(s.id);
      return r.enabled ? null : r;
    }, 15_000, 'the disable');
    expect(row.disabledReason).toBe('gone');
    expect((await sendsOf(s.id)).map((d) => d.status)).toEqual(['dead']);
    await post(s.a.ownerApi, s.ch, { text: 'after' });
    await new Promise((r) => setTimeout(r, 800));
    expect(s.mine()).toHaveLength(1);
    expect(await h.deps.database.db.select().from(mirrorLines).where(eq(mirrorLines.mirrorId, s.id))).toHaveLength(0);
    const notes = await h.deps.database.db.select().from(notifications).where(eq(notifications.accountId, s.a.accountId));
    expect(notes.map((n) => n.kind)).toEqual(['mirror.disabled', 'mirror.disabled']);
    const mails = await eventually(async () => {
      const m = smtp.inbox.filter((x) => x.raw.includes(s.id));
      return m.length >= 2 ? m : null;
    }, 10_000, 'the emails');
    expect(mails.flatMap((m) => m.to).sort()).toEqual([s.a.owner.email, admin.email].sort());
    expect(mails[0].raw).toContain('410 Gone');
    expect(mails[0].raw).not.toContain(s.path);
  });

  test('a mirror send waits in its account\'s lane of the dispatcher for one of the account\'s in-flight slots, then goes', async () => {
    const s = await setup('slack');
    // Another process holds every slot of the account (the cap is 4 for a small account).
    const held = await acquireInFlightSlots(h.deps, new Map([[s.a.accountId, 16]]), 60_000, 'another-process');
    expect(held.count(s.a.accountId)).toBe(4);
    try {
      await post(s.a.ownerApi, s.ch, { text: 'waits for a slot' });
      await eventually(async () => worker.dispatcher.stats().waiting >= 1, 15_000, 'the mirror row waiting in the dispatcher');
      await new Promise((r) => setTimeout(r, 500));
      expect(s.mine()).toHaveLength(0);
    } finally {
      await held.release();
    }
    await eventually(async () => s.mine().length >= 1, 15_000, 'the send once a slot is free');
    expect(s.mine()[0].body).toContain('waits for a slot');
  });

  test('after 24 h of failures the next failure disables the mirror (failing)', async () => {
    const s = await setup('slack');
    await h.deps.database.db.update(mirrors).set({ failingSince: new Date(Date.now() - 25 * 3600_000) }).where(eq(mirrors.id, s.id));
    rx.script({ status: 503 });
    await post(s.a.ownerApi, s.ch, { text: 'still failing' });
    const row = await eventually(async () => {
      const r = await mirrorRow(s.id);
      return r.enabled ? null : r;
    }, 15_000, 'the disable');
    expect(row.disabledReason).toBe('failing');
    expect((await sendsOf(s.id)).map((d) => d.status)).toEqual(['dead']);
  });
});
