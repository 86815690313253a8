import type { Config } from '../config';

/** What a notification is about. `data` of each kind is shown below; free-form extras are never mailed. */
export type NotificationKind = 'webhook.awaiting_enable' | 'webhook.disabled' | 'webhook.taken_over' | 'mirror.disabled';

export interface NotificationData {
  /** the webhook endpoint concerned */
  endpoint_id?: string;
  /** the channel mirror concerned (mirror.disabled) */
  mirror_id?: string;
  /** scheme, host and port of its URL only: a path or query may hold a receiver's token */
  url_origin?: string;
  /** why: `registered`, `url_changed`, `payload_text` (awaiting_enable); `manual`, `failing`, `gone`, `slow` (disabled); `changed_by_other` (taken_over) */
  reason?: string;
  [field: string]: unknown;
}

const WHY: Record<string, string> = {
  registered: 'was registered through an API key or agent token',
  url_changed: 'had its URL changed through an API key or agent token',
  payload_text: 'was switched to the text payload through an API key or agent token',
  manual: 'was disabled by an owner or admin',
  failing: 'was disabled automatically: every delivery failed for 24 hours',
  gone: 'was disabled automatically: the receiver answered 410 Gone',
  slow: 'was disabled automatically: the median latency of its last 50 deliveries was above 2 seconds',
  changed_by_other: 'had its URL or payload mode changed by someone other than its creator, who is now its creator',
};

const ACTION: Record<string, string> = {
  'webhook.awaiting_enable': 'It delivers nothing until an owner or admin reviews it and enables it on the Webhooks page of the dashboard.',
  'webhook.disabled': 'It delivers nothing until an owner or admin enables it again on the Webhooks page of the dashboard.',
  'webhook.taken_over': 'Its text is now limited to the channels its new creator can read, and its units are charged to their seat. Check the change on the Webhooks page of the dashboard and in the audit log.',
};

const SUBJECT: Record<string, string> = {
  'webhook.awaiting_enable': 'Webhook endpoint awaiting enable',
  'webhook.disabled': 'Webhook endpoint disabled',
  'webhook.taken_over': 'Webhook endpoint changed by someone else',
};

/**
 * The email of a notification: subject and plain text, built only from known fields (the
 * endpoint id, its URL's origin, the reason), so no secret, token or URL path can reach a mailbox.
 */
export function renderNotificationEmail(
  config: Pick<Config, 'publicWebUrl'>,
  input: { accountId: string; kind: string; data: NotificationData },
): { subject: string; text: string } {
  const { data } = input;
  if (input.kind === 'mirror.disabled') return mirrorDisabledEmail(config, input.accountId, data);
  const what = `Webhook endpoint ${data.endpoint_id ?? ''}${data.url_origin ? ` (${data.url_origin})` : ''}`.trim();
  const why = (data.reason && WHY[data.reason]) ?? (data.reason ? `changed state (${data.reason})` : 'needs attention');
  const action = ACTION[input.kind] ?? ACTION['webhook.disabled'];
  const subject = `${SUBJECT[input.kind] ?? SUBJECT['webhook.disabled']} in account ${input.accountId}`;
  const text = [
    `${what} ${why}.`,
    action,
    '',
    `Account: ${input.accountId}`,
    `Dashboard: ${config.publicWebUrl}`,
  ].join('\n');
  return { subject, text };
}

const MIRROR_WHY: Record<string, string> = {
  failing: 'every message failed to send for 24 hours',
  gone: 'the receiving tool answered 410 Gone (its incoming webhook was removed)',
};

/** A channel mirror disabled automatically: which one, its URL's origin, why, and where to enable it. */
function mirrorDisabledEmail(config: Pick<Config, 'publicWebUrl'>, accountId: string, data: NotificationData): { subject: string; text: string } {
  const what = `Channel mirror ${data.mirror_id ?? ''}${data.url_origin ? ` (${data.url_origin})` : ''}`.trim();
  const why = (data.reason && MIRROR_WHY[data.reason]) ?? `changed state (${data.reason ?? 'unknown'})`;
  return {
    subject: `Channel mirror disabled in account ${accountId}`,
    text: [
      `${what} was disabled automatically: ${why}.`,
      'It mirrors nothing until an owner or admin enables it again on the dashboard.',
      '',
      `Account: ${accountId}`,
      `Dashboard: ${config.publicWebUrl}`,
    ].join('\n'),
  };
}
