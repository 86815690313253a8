import { emailNotifications, notifyAccountAdmins, openWebhookSecret, recordAdminNotifications } from '@teamchat/core';
import { eq, notifications, webhookEndpoints } from '@teamchat/db';
import { addPerson, startHarness, type Harness } from '../../../../test/support/harness';
import { LOOPBACK_ONLY, closedPort, registered, webhookAccount } from './endpoint-helpers';
import { startSmtpSink, type Mail, type SmtpSink } from '../../../../test/support/smtp-sink';

/**
 * docs/webhooks.md "Notifications": each disabling (and a credential's registration or risky change) notifies the
 * account's owners and admins: a notifications row each, plus an email through nodemailer when
 * SMTP_URL is set. The email is received here by smtp-server on loopback.
 */
let smtp: SmtpSink;
let h: Harness;

beforeAll(async () => {
  smtp = await startSmtpSink();
  h = await startHarness({ ...LOOPBACK_ONLY, ...smtp.config });
});
afterAll(async () => {
  await h.close();
  await smtp.close();
});

async function mailFor(email: string, timeoutMs = 10_000): Promise<Mail> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const found = smtp.inbox.find((m) => m.to.includes(email));
    if (found) return found;
    if (Date.now() > until) throw new Error(`no mail for ${email}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function noticesOf(accountId: string) {
  return h.deps.database.db.select().from(notifications).where(eq(notifications.accountId, accountId)).orderBy(notifications.seq);
}

describe('Notifications to owners and admins (spec: enablement table, "owners and admins are emailed")', () => {
  test('a registration through a credential: a row and an email for each owner and admin, none for members; no secret, token or URL path in the email', async () => {
    const a = await webhookAccount(h);
    const admin = await addPerson(h, a.accountId, 'admin');
    const member = await addPerson(h, a.accountId, 'member');
    const url = `https://127.0.0.1:${await closedPort()}/hooks/receiver-path-token-77aa`;
    const ep = await registered(a.key, { url });
    const ownerMail = await mailFor(a.owner.email);
    const adminMail = await mailFor(admin.email);
    for (const mail of [ownerMail, adminMail]) {
      expect(mail.raw).toMatch(/Subject: Webhook endpoint awaiting enable/);
      expect(mail.raw).toContain(ep.id);
      expect(mail.raw).toContain('https://127.0.0.1:');
      expect(mail.raw).not.toContain('receiver-path-token-77aa');
      expect(mail.raw).not.toMatch(/whsec_/);
      const [row] = await h.deps.database.db.select().from(webhookEndpoints).where(eq(webhookEndpoints.id, ep.id));
      const secret = openWebhookSecret(h.deps.config, row.secretEnc);
      expect(mail.raw).not.toContain(secret.slice(6, 30));
    }
    expect(smtp.inbox.some((m) => m.to.includes(member.email))).toBe(false);
    const notes = await noticesOf(a.accountId);
    expect(notes.map((n) => n.userId).sort()).toEqual([a.owner.userId, admin.user_id].sort());
    // emailed_at is stamped once the mail is accepted.
    const until = Date.now() + 5000;
    while ((await noticesOf(a.accountId)).some((n) => n.emailedAt === null) && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
    expect((await noticesOf(a.accountId)).every((n) => n.emailedAt !== null)).toBe(true);
  });

  test('a manual disable emails the owners and admins', async () => {
    const a = await webhookAccount(h);
    const ep = await registered(a.web);
    await a.web.patch(`/webhooks/${ep.id}`, { enabled: false });
    const mail = await mailFor(a.owner.email);
    expect(mail.raw).toMatch(/Subject: Webhook endpoint disabled/);
    expect(mail.raw).toContain('disabled by an owner or admin');
  });

  test('notifyAccountAdmins (what the delivery engine calls on failing, gone, slow): rows and emails, awaited', async () => {
    const a = await webhookAccount(h);
    const ep = await registered(a.web);
    const recorded = await notifyAccountAdmins(h.deps, { accountId: a.accountId, kind: 'webhook.disabled', data: { endpoint_id: ep.id, reason: 'gone' } });
    expect(recorded).toHaveLength(1);
    expect(recorded[0].id).toMatch(/^ntf_/);
    const [row] = await noticesOf(a.accountId);
    expect(row).toMatchObject({ kind: 'webhook.disabled', data: { endpoint_id: ep.id, reason: 'gone' } });
    expect(row.emailedAt).not.toBeNull();
    expect((await mailFor(a.owner.email)).raw).toContain('410 Gone');
  });

  test('an SMTP server that cannot be reached: logged, never thrown; the in-app row stays, not stamped emailed', async () => {
    const a = await webhookAccount(h);
    const recorded = await recordAdminNotifications(h.deps.database.db, { accountId: a.accountId, kind: 'webhook.disabled', data: { reason: 'slow' } });
    const deps = { ...h.deps, config: { ...h.deps.config, smtpUrl: `smtp://127.0.0.1:${await closedPort()}` } };
    await expect(emailNotifications(deps, recorded)).resolves.toBeUndefined();
    const [row] = await noticesOf(a.accountId);
    expect(row.emailedAt).toBeNull();
  });
});
