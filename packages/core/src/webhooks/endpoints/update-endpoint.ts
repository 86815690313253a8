import { eq, sql, webhookEndpoints, type Executor } from '@teamchat/db';
import { recordAudit } from '../../audit';
import { AppError } from '../../errors';
import { recordAdminNotifications, urlOrigin, type RecordedNotification } from '../../notifications/notify-admins';
import { isWebSession } from '../../principal';
import { sealWebhookSecret } from '../endpoint-secrets';
import { checkChannels, checkEndpointUrl, refuseWebOnlyFields } from './checks';
import type { EndpointCall } from './context';
import { dropOpenDeliveries } from '../delivery/rows';
import { enableTestHoldMs } from '../delivery/schedule';
import { nextEnablement } from './enablement';
import { loadEndpoint, type WebhookEndpointRow } from './load';
import type { EndpointFields } from './rules';
import { creatorAfterChange } from './text-access';

export interface UpdateInput extends EndpointCall, EndpointFields {
  endpointId: string;
  /** from If-Match: the version the caller read; a mismatch is 412 stale */
  expectedVersion?: number;
}

export interface UpdateResult {
  endpoint: WebhookEndpointRow;
  /** it went from disabled to enabled: the caller delivers a test event once committed */
  enabled: boolean;
  notifications: RecordedNotification[];
}

/**
 * PATCH: changes the URL, events, channels, payload, custom header, or enables/disables
 * (rules in enablement.ts). `enabled: true` and `authorization` are web session only. A new URL
 * is vetted by the URL guard and clears the custom header unless the same request sets one.
 * Whoever changes `url` or `payload` becomes the creator (text-access.ts); when that is someone
 * else, the old creator, owners and admins are notified and the open deliveries (bodies gated by
 * the old creator's reading rights) are dropped. Bumps `version`.
 */
export async function updateEndpoint(tx: Executor, input: UpdateInput): Promise<UpdateResult> {
  const { deps, actor } = input;
  const web = isWebSession(actor);
  refuseWebOnlyFields(web, input);
  const row = await loadEndpoint(tx, actor.accountId, input.endpointId, { forUpdate: true });
  if (input.expectedVersion !== undefined && input.expectedVersion !== row.version) {
    throw new AppError('stale', 'The webhook endpoint changed since it was read; read it again.', { current_version: row.version });
  }
  const changes: Partial<typeof webhookEndpoints.$inferInsert> = {};
  if (input.url !== undefined && input.url !== row.url) changes.url = await checkEndpointUrl(deps.config, input.url);
  if (input.events !== undefined) changes.events = [...new Set(input.events)];
  if (input.channels !== undefined) {
    const filter = await checkChannels(tx, actor.accountId, input.channels);
    changes.allChannels = filter.allChannels;
    changes.channelIds = filter.channelIds;
  }
  if (input.payload !== undefined) changes.payload = input.payload;
  if (input.authorization !== undefined) {
    changes.authorizationEnc = input.authorization === null ? null : sealWebhookSecret(deps.config, input.authorization);
  }
  // The custom header is a secret a person gave the old receiver: a new URL never gets it, unless
  // the same request sets a value for it (docs/webhooks.md "Who reads what an endpoint sends").
  const headerDropped = changes.url !== undefined && input.authorization === undefined && row.authorizationEnc !== null;
  if (headerDropped) changes.authorizationEnc = null;
  const creator = creatorAfterChange(row, actor, { url: changes.url, payload: changes.payload });
  const takenOver = creator !== row.createdByUserId;
  if (takenOver) {
    changes.createdByUserId = creator;
    changes.createdVia = actor.principal.via;
  }

  const now = deps.now();
  const next = nextEnablement(row, { web, url: input.url, payload: input.payload, enabled: input.enabled, now });
  changes.enabled = next.enabled;
  changes.disabledReason = next.disabledReason;
  if (next.enabledAt !== undefined) changes.enabledAt = next.enabledAt;
  // Enabling holds the endpoint's event deliveries until its test event is recorded (the test is
  // delivered first: the enabling request lifts the hold, deliverEnableTest).
  if (next.enabling) changes.enableTestUntil = new Date(now.getTime() + enableTestHoldMs(deps.config));
  if (next.disabledAt !== undefined) changes.disabledAt = next.disabledAt;
  if (next.clearFailing) changes.failingSince = null;

  const [endpoint] = await tx
    .update(webhookEndpoints)
    .set({ ...changes, version: sql`${webhookEndpoints.version} + 1`, updatedAt: now })
    .where(eq(webhookEndpoints.id, row.id))
    .returning();
  // Disabled now (manual, or awaiting_enable after a credential's change): its open deliveries
  // are dropped at once, as on automatic disabling; events raised while disabled are never sent.
  if (row.enabled && !endpoint.enabled) await dropOpenDeliveries(tx, row.id, `endpoint disabled (${endpoint.disabledReason})`);
  // Open deliveries hold bodies rendered under the old creator's reading rights: none goes to the new one.
  else if (takenOver) await dropOpenDeliveries(tx, row.id, 'endpoint taken over (url or payload changed by someone other than its creator)');
  await recordAudit(tx, {
    accountId: actor.accountId, action: 'webhook.updated', actor, targetType: 'webhook_endpoint', targetId: row.id,
    data: {
      // names only: the custom header's value never reaches the audit log
      fields: (['url', 'events', 'channels', 'payload', 'enabled', 'authorization'] as const).filter((f) => input[f] !== undefined || (f === 'authorization' && headerDropped)),
      enabled: { from: row.enabled, to: endpoint.enabled },
      disabled_reason: { from: row.disabledReason, to: endpoint.disabledReason },
      ...(takenOver ? { created_by: { from: row.createdByUserId, to: endpoint.createdByUserId } } : {}),
    },
  });
  const notifications = next.notify
    ? await recordAdminNotifications(tx, {
      accountId: actor.accountId,
      kind: next.notify.kind,
      data: { endpoint_id: row.id, url_origin: urlOrigin(endpoint.url), reason: next.notify.reason, by: { user_id: actor.userId, via: actor.principal.via } },
    })
    : [];
  if (takenOver) {
    notifications.push(...await recordAdminNotifications(tx, {
      accountId: actor.accountId,
      kind: 'webhook.taken_over',
      alsoUserIds: [row.createdByUserId],
      data: {
        endpoint_id: row.id, url_origin: urlOrigin(endpoint.url), reason: 'changed_by_other',
        fields: (['url', 'payload'] as const).filter((f) => changes[f] !== undefined && changes[f] !== row[f]),
        previous_creator: row.createdByUserId, by: { user_id: actor.userId, via: actor.principal.via },
      },
    }));
  }
  return { endpoint, enabled: next.enabling, notifications };
}
