import { and, eq, inArray, members, notifications, or, users, type Executor } from '@teamchat/db';
import type { Deps } from '../context';
import { newId } from '../ids';
import { mailTransport } from './mailer';
import { renderNotificationEmail, type NotificationData, type NotificationKind } from './messages';

export interface NotifyInput {
  accountId: string;
  kind: NotificationKind | string;
  data: NotificationData;
  /** people of the account notified besides its owners and admins (an endpoint's creator who is a member) */
  alsoUserIds?: readonly string[];
}

/** A notification row written for one owner or admin, with the address to mail it to. */
export interface RecordedNotification {
  id: string;
  accountId: string;
  userId: string;
  email: string;
  kind: string;
  data: NotificationData;
}

/**
 * Writes one `notifications` row per owner and admin of the account (and per person of
 * `alsoUserIds` who has a seat in it), in the caller's
 * transaction (so the notice exists exactly when the change does). Email is a separate step,
 * after commit: `emailNotifications`.
 */
export async function recordAdminNotifications(tx: Executor, input: NotifyInput): Promise<RecordedNotification[]> {
  const admins = await tx
    .select({ userId: members.userId, email: users.email })
    .from(members)
    .innerJoin(users, eq(users.id, members.userId))
    .where(and(
      eq(members.accountId, input.accountId),
      input.alsoUserIds?.length
        ? or(inArray(members.role, ['owner', 'admin']), inArray(members.userId, [...input.alsoUserIds]))
        : inArray(members.role, ['owner', 'admin']),
    ))
    .orderBy(members.seq);
  if (admins.length === 0) return [];
  const rows = admins.map((a) => ({ id: newId('notification'), accountId: input.accountId, userId: a.userId, kind: input.kind, data: input.data }));
  await tx.insert(notifications).values(rows);
  return rows.map((r, i) => ({ ...r, email: admins[i].email }));
}

/**
 * Mails each recorded notification when SMTP_URL is set, and stamps `emailed_at` on the ones
 * sent. Never throws: a failure is logged (without the message body) and the in-app row stays.
 */
export async function emailNotifications(
  deps: Pick<Deps, 'config' | 'database' | 'logger' | 'now'>,
  recorded: readonly RecordedNotification[],
): Promise<void> {
  const transport = mailTransport(deps.config);
  if (!transport || recorded.length === 0) return;
  const sent: string[] = [];
  for (const n of recorded) {
    try {
      const { subject, text } = renderNotificationEmail(deps.config, { accountId: n.accountId, kind: n.kind, data: n.data });
      await transport.sendMail({ from: deps.config.smtpFrom, to: n.email, subject, text });
      sent.push(n.id);
    } catch (err) {
      deps.logger.warn('notification email failed', { notification_id: n.id, kind: n.kind, error: (err as Error).message });
    }
  }
  if (sent.length === 0) return;
  try {
    await deps.database.db.update(notifications).set({ emailedAt: deps.now() }).where(inArray(notifications.id, sent));
  } catch (err) {
    deps.logger.warn('could not stamp emailed_at', { error: (err as Error).message });
  }
}

/**
 * Notifies the account's owners and admins: a `notifications` row each and, when SMTP_URL is
 * set, an email each (the transport is made once per process; errors are logged, not thrown).
 * For callers outside a request transaction (the delivery worker's automatic disabling);
 * inside one, use `recordAdminNotifications` in the transaction and `emailNotifications` after commit.
 */
export async function notifyAccountAdmins(
  deps: Pick<Deps, 'config' | 'database' | 'logger' | 'now'>,
  input: NotifyInput,
): Promise<RecordedNotification[]> {
  const recorded = await recordAdminNotifications(deps.database.db, input);
  await emailNotifications(deps, recorded);
  return recorded;
}

/** `https://host:port` of a webhook URL, for notices that must not carry its path or query. */
export function urlOrigin(url: string): string | undefined {
  try {
    return new URL(url).origin;
  } catch {
    return undefined;
  }
}
