import { webhookEndpoints, type Executor } from '@teamchat/db';
import { recordAudit } from '../../audit';
import { newId } from '../../ids';
import { recordAdminNotifications, urlOrigin, type RecordedNotification } from '../../notifications/notify-admins';
import { isWebSession } from '../../principal';
import { sealWebhookSecret } from '../endpoint-secrets';
import { generateSigningSecret } from '../signing';
import { claimEndpointPlace } from './budget';
import { checkChannels, checkEndpointUrl, refuseWebOnlyFields } from './checks';
import type { EndpointCall } from './context';
import type { WebhookEndpointRow } from './load';
import type { ChannelsFilter, EndpointPayloadMode } from './rules';

export interface RegisterInput extends EndpointCall {
  url: string;
  events: string[];
  channels: ChannelsFilter;
  payload?: EndpointPayloadMode;
  enabled?: boolean;
  authorization?: string | null;
}

export interface RegisterResult {
  endpoint: WebhookEndpointRow;
  /** the signing secret, for a web session's registration only (shown once, in that response) */
  secret: string | null;
  /** owners' and admins' notices written in the transaction, to email after commit */
  notifications: RecordedNotification[];
}

/**
 * Registers an endpoint (spec: Webhook endpoint enablement, first two rows).
 * - Through a credential: disabled `awaiting_enable`, `secret_pending_reveal`, no secret in the
 *   answer, owners and admins notified. `enabled: true` or `authorization` from a credential:
 *   403 forbidden, web_session_required.
 * - From a web session: enabled at once (unless `enabled: false`, then disabled `manual`), the
 *   secret returned once.
 * The URL is vetted by the guard; the per-seat count is claimed under an advisory lock.
 */
export async function registerEndpoint(tx: Executor, input: RegisterInput): Promise<RegisterResult> {
  const { deps, actor } = input;
  const web = isWebSession(actor);
  refuseWebOnlyFields(web, input);
  await checkEndpointUrl(deps.config, input.url);
  const filter = await checkChannels(tx, actor.accountId, input.channels);
  await claimEndpointPlace(tx, deps.config, actor.accountId);

  const now = deps.now();
  const secret = generateSigningSecret();
  const enabled = web && input.enabled !== false;
  const [endpoint] = await tx
    .insert(webhookEndpoints)
    .values({
      id: newId('webhook'),
      accountId: actor.accountId,
      createdByUserId: actor.userId,
      createdVia: actor.principal.via,
      url: input.url,
      events: [...new Set(input.events)],
      allChannels: filter.allChannels,
      channelIds: filter.channelIds,
      payload: input.payload ?? 'pointers',
      enabled,
      disabledReason: enabled ? null : web ? 'manual' : 'awaiting_enable',
      enabledAt: enabled ? now : null,
      disabledAt: enabled ? null : now,
      secretEnc: sealWebhookSecret(deps.config, secret),
      secretPendingReveal: !web,
      authorizationEnc: input.authorization ? sealWebhookSecret(deps.config, input.authorization) : null,
      createdAt: now,
      updatedAt: now,
    })
    .returning();
  await recordAudit(tx, {
    accountId: actor.accountId, action: 'webhook.created', actor, targetType: 'webhook_endpoint', targetId: endpoint.id,
    data: { url_origin: urlOrigin(endpoint.url), enabled: endpoint.enabled, disabled_reason: endpoint.disabledReason },
  });
  const notifications = web
    ? []
    : await recordAdminNotifications(tx, {
      accountId: actor.accountId,
      kind: 'webhook.awaiting_enable',
      data: { endpoint_id: endpoint.id, url_origin: urlOrigin(endpoint.url), reason: 'registered', by: { user_id: actor.userId, via: actor.principal.via } },
    });
  return { endpoint, secret: web ? secret : null, notifications };
}
