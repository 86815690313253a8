import { and, eq, mirrorDeliveries, mirrorLines, mirrors, notifications, webhookBodies, webhookDeliveries, webhookEndpoints } from '@teamchat/db';
import { disableIfFailing, failingCandidates, newId, recordHealth } from '@teamchat/core';
import { FAILING_CHECK_EVERY_MS, WebhookQueues, maintenanceScheduleFrom, webhookMaintenance } from '../src';
import { createMigratedDatabase, dropDatabase } from '../../../test/support/databases';
import { addPerson, newAccount, type Harness, type TestAccount } from '../../../test/support/harness';
import { createEndpointRow, endpointRow, startWebhookHarness } from '../../../test/support/webhooks';
import { startSmtpSink, type Mail, type SmtpSink } from '../../../test/support/smtp-sink';

/**
 * Spec: Webhook endpoint enablement, "enabled | every delivery failed for 24 hours | automatic |
 * disabled, `failing` | pending retries are dropped; owners and admins emailed"; Limits,
 * "Auto-disable `failing`". The maintenance's check (maintenance.ts, disableFailingEndpoints)
 * disables an endpoint once its failures have lasted 24 h, not at its next failed attempt, which
 * the retry schedule may put a day later; mirrors alike (docs/mirrors.md). Real PostgreSQL, Redis
 * and SMTP (smtp-server on loopback). A database of its own: the check reads the whole endpoints
 * and mirrors tables.
 */
const HOUR = 3600_000;
let db: { name: string; url: string };
let smtp: SmtpSink;
let h: Harness;
let queues: WebhookQueues;

beforeAll(async () => {
  smtp = await startSmtpSink();
  db = await createMigratedDatabase('teamchat_whfailing');
  h = await startWebhookHarness({ databaseUrl: db.url, ...smtp.config });
  queues = new WebhookQueues(h.deps);
});
afterAll(async () => {
  await queues.close();
  await h.close();
  await smtp.close();
  await dropDatabase(db.name);
});

/** A pass whose `failing` check is due and whose purge is not. */
const checkDue = () => ({ nextPurgeAt: Infinity, nextFailingCheckAt: 0 });

/** An account with an owner, an admin and a member (members are never emailed). */
async function account(): Promise<{ acc: TestAccount; adminEmail: string; memberEmail: string }> {
  const acc = await newAccount(h);
  const admin = await addPerson(h, acc.accountId, 'admin');
  const member = await addPerson(h, acc.accountId, 'member');
  return { acc, adminEmail: admin.email, memberEmail: member.email };
}

/** An enabled endpoint with the given health, and a retry of an earlier event waiting three hours: what disabling drops. */
async function failingEndpoint(acc: TestAccount, health: { failingSince: Date; lastSuccessAt?: Date }): Promise<{ id: string; retryId: string }> {
  const ep = await createEndpointRow(h, { accountId: acc.accountId, createdByUserId: acc.owner.userId, url: 'https://127.0.0.1:9/hook-private-path' });
  await h.deps.database.db.update(webhookEndpoints)
    .set({ failingSince: health.failingSince, lastFailureAt: new Date(Date.now() - 2 * HOUR), lastSuccessAt: health.lastSuccessAt ?? null })
    .where(eq(webhookEndpoints.id, ep.id));
  const bodyId = newId('webhookBody');
  const eventId = newId('event');
  await h.deps.database.db.insert(webhookBodies).values({ id: bodyId, accountId: acc.accountId, eventId, eventType: 'message.posted', mode: 'pointers', body: '{}' });
  const retryId = newId('delivery');
  await h.deps.database.db.insert(webhookDeliveries).values({
    id: retryId, accountId: acc.accountId, endpointId: ep.id, eventId, eventType: 'message.posted', bodyId, kind: 'event', chainId: retryId,
    attempt: 8, status: 'retrying', nextRetryAt: new Date(Date.now() + 3 * HOUR), eventCreatedAt: new Date(Date.now() - 21 * HOUR),
  });
  return { id: ep.id, retryId };
}

const deliveryRow = async (id: string) => (await h.deps.database.db.select().from(webhookDeliveries).where(eq(webhookDeliveries.id, id)))[0];
const mailsAbout = (endpointId: string) => smtp.inbox.filter((m) => m.raw.includes(endpointId));
async function disabledCount(): Promise<number> {
  return (await h.deps.metrics.endpointsDisabledTotal.get()).values.find((v) => v.labels.reason === 'failing')?.value ?? 0;
}

async function mailsFor(endpointId: string, count: number): Promise<Mail[]> {
  const until = Date.now() + 10_000;
  while (mailsAbout(endpointId).length < count && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
  return mailsAbout(endpointId);
}

describe('failing is applied once 24 h have passed, by the maintenance (spec: Webhook endpoint enablement)', () => {
  test('failing for 24 h 1 min with a retry due later: disabled failing, the retry dropped, owners and admins emailed', async () => {
    const { acc, adminEmail, memberEmail } = await account();
    const ep = await failingEndpoint(acc, { failingSince: new Date(Date.now() - 24 * HOUR - 60_000) });
    const before = await disabledCount();

    const result = await webhookMaintenance(h.deps, queues, checkDue(), [acc.accountId]);

    expect(result.disabled).toBe(1);
    expect(await endpointRow(h, ep.id)).toMatchObject({ enabled: false, disabledReason: 'failing', disabledAt: expect.any(Date) });
    // The same drop as an attempt's record leaves: dead, never attempted, still replayable.
    expect(await deliveryRow(ep.retryId)).toMatchObject({ status: 'dead', nextRetryAt: null, error: 'dropped: endpoint disabled (failing)', attemptedAt: null });
    expect(await disabledCount()).toBe(before + 1);
    const notices = await h.deps.database.db.select().from(notifications)
      .where(and(eq(notifications.accountId, acc.accountId), eq(notifications.kind, 'webhook.disabled')));
    expect(notices).toHaveLength(2);
    expect(notices.every((n) => (n.data as { reason?: string }).reason === 'failing')).toBe(true);
    const mails = await mailsFor(ep.id, 2);
    expect(mails.map((m) => m.to).flat().sort()).toEqual([acc.owner.email, adminEmail].sort());
    for (const mail of mails) {
      expect(mail.raw).toMatch(/Subject: Webhook endpoint disabled/);
      expect(mail.raw).not.toContain('hook-private-path');
    }
    expect(smtp.inbox.some((m) => m.to.includes(memberEmail))).toBe(false);

    // Once disabled, later checks leave it (and mail no one again).
    expect((await webhookMaintenance(h.deps, queues, checkDue(), [acc.accountId])).disabled).toBe(0);
    expect(mailsAbout(ep.id)).toHaveLength(2);
  });

  test('failing for 23 h, or for 25 h with a success an hour ago: left enabled, their retries waiting, no one emailed', async () => {
    const { acc } = await account();
    const young = await failingEndpoint(acc, { failingSince: new Date(Date.now() - 23 * HOUR) });
    const recentSuccess = await failingEndpoint(acc, { failingSince: new Date(Date.now() - 25 * HOUR), lastSuccessAt: new Date(Date.now() - HOUR) });

    expect((await webhookMaintenance(h.deps, queues, checkDue(), [acc.accountId])).disabled).toBe(0);

    for (const ep of [young, recentSuccess]) {
      expect(await endpointRow(h, ep.id)).toMatchObject({ enabled: true, disabledReason: null });
      expect(await deliveryRow(ep.retryId)).toMatchObject({ status: 'retrying', error: null });
      expect(mailsAbout(ep.id)).toEqual([]);
    }
  });

  test('a success recorded after the check read the endpoint keeps it enabled: the rule is judged again under the row\'s lock', async () => {
    const { acc } = await account();
    const ep = await failingEndpoint(acc, { failingSince: new Date(Date.now() - 25 * HOUR) });
    const now = h.deps.now();
    expect((await failingCandidates(h.deps.database.db, now, { limit: 10, accountIds: [acc.accountId] })).map((c) => c.id)).toEqual([ep.id]);

    await recordHealth(h.deps.database.db, ep.id, true, now);

    expect(await h.deps.database.db.transaction((tx) => disableIfFailing(tx, ep.id, now))).toBe(false);
    expect(await endpointRow(h, ep.id)).toMatchObject({ enabled: true, failingSince: null });
    expect(await deliveryRow(ep.retryId)).toMatchObject({ status: 'retrying' });
  });

  test('the check runs once a minute, the first a minute after the engine\'s start', async () => {
    const { acc } = await account();
    const ep = await failingEndpoint(acc, { failingSince: new Date(Date.now() - 25 * HOUR) });
    const startedAt = Date.now();
    const schedule = maintenanceScheduleFrom(startedAt);
    expect(schedule.nextFailingCheckAt).toBe(startedAt + FAILING_CHECK_EVERY_MS);

    // A pass of the first minute does not check.
    expect((await webhookMaintenance(h.deps, queues, schedule, [acc.accountId])).disabled).toBe(0);
    expect(await endpointRow(h, ep.id)).toMatchObject({ enabled: true });

    // Once due, the pass checks, and the next check is a minute on.
    schedule.nextFailingCheckAt = Date.now() - 1;
    const passAt = Date.now();
    expect((await webhookMaintenance(h.deps, queues, schedule, [acc.accountId])).disabled).toBe(1);
    expect(await endpointRow(h, ep.id)).toMatchObject({ enabled: false, disabledReason: 'failing' });
    expect(schedule.nextFailingCheckAt).toBeGreaterThanOrEqual(passAt + FAILING_CHECK_EVERY_MS);
  });
});

/** An enabled mirror with the given health, a send of earlier lines to retry in three hours and a line waiting: what disabling drops. */
async function failingMirror(acc: TestAccount, health: { failingSince: Date; lastSuccessAt?: Date }): Promise<{ id: string; retryId: string }> {
  const db = h.deps.database.db;
  const id = newId('mirror');
  await db.insert(mirrors).values({
    id, accountId: acc.accountId, createdByUserId: acc.owner.userId, url: 'https://127.0.0.1:9/services/T000/B000/mirror-secret-path', channelIds: [],
    format: 'slack', enabled: true, enabledAt: new Date(Date.now() - 30 * HOUR),
    failingSince: health.failingSince, lastFailureAt: new Date(Date.now() - 2 * HOUR), lastSuccessAt: health.lastSuccessAt ?? null,
  });
  const retryId = newId('mirrorDelivery');
  await db.insert(mirrorDeliveries).values({
    id: retryId, chainId: retryId, accountId: acc.accountId, mirrorId: id, kind: 'lines', attempt: 8, status: 'retrying',
    body: '{"text":"earlier"}', lineCount: 1, nextRetryAt: new Date(Date.now() + 3 * HOUR),
  });
  await db.insert(mirrorLines).values({ mirrorId: id, accountId: acc.accountId, eventId: newId('event'), channelName: 'general', authorName: 'Ada', text: 'waiting', isReply: false });
  return { id, retryId };
}

const mirrorRow = async (id: string) => (await h.deps.database.db.select().from(mirrors).where(eq(mirrors.id, id)))[0];
const mirrorSend = async (id: string) => (await h.deps.database.db.select().from(mirrorDeliveries).where(eq(mirrorDeliveries.id, id)))[0];
const linesOf = async (id: string) => h.deps.database.db.select().from(mirrorLines).where(eq(mirrorLines.mirrorId, id));

describe('a mirror whose sends have all failed for 24 h is disabled by the same check (docs/mirrors.md)', () => {
  test('failing for 24 h 1 min with a retry due later: disabled failing, what waits dropped, owners and admins told; the URL\'s path in no mail', async () => {
    const { acc, adminEmail } = await account();
    const m = await failingMirror(acc, { failingSince: new Date(Date.now() - 24 * HOUR - 60_000) });

    expect((await webhookMaintenance(h.deps, queues, checkDue(), [acc.accountId])).disabled).toBe(1);

    expect(await mirrorRow(m.id)).toMatchObject({ enabled: false, disabledReason: 'failing', disabledAt: expect.any(Date) });
    expect(await mirrorSend(m.retryId)).toMatchObject({ status: 'dead', error: 'dropped: mirror disabled (failing)', attemptedAt: null });
    expect(await linesOf(m.id)).toEqual([]);
    const notices = await h.deps.database.db.select().from(notifications)
      .where(and(eq(notifications.accountId, acc.accountId), eq(notifications.kind, 'mirror.disabled')));
    expect(notices.map((n) => n.data)).toEqual([
      { mirror_id: m.id, url_origin: 'https://127.0.0.1:9', reason: 'failing' }, { mirror_id: m.id, url_origin: 'https://127.0.0.1:9', reason: 'failing' },
    ]);
    const mails = await mailsFor(m.id, 2);
    expect(mails.map((mail) => mail.to).flat().sort()).toEqual([acc.owner.email, adminEmail].sort());
    for (const mail of mails) expect(mail.raw).not.toContain('mirror-secret-path');

    // Once disabled, later checks leave it.
    expect((await webhookMaintenance(h.deps, queues, checkDue(), [acc.accountId])).disabled).toBe(0);
  });

  test('failing for 23 h, or for 25 h with a success an hour ago: left enabled, what waits kept', async () => {
    const { acc } = await account();
    const young = await failingMirror(acc, { failingSince: new Date(Date.now() - 23 * HOUR) });
    const recentSuccess = await failingMirror(acc, { failingSince: new Date(Date.now() - 25 * HOUR), lastSuccessAt: new Date(Date.now() - HOUR) });

    expect((await webhookMaintenance(h.deps, queues, checkDue(), [acc.accountId])).disabled).toBe(0);

    for (const m of [young, recentSuccess]) {
      expect(await mirrorRow(m.id)).toMatchObject({ enabled: true, disabledReason: null });
      expect(await mirrorSend(m.retryId)).toMatchObject({ status: 'retrying', error: null });
      expect(await linesOf(m.id)).toHaveLength(1);
    }
  });
});
