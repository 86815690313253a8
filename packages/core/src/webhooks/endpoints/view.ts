import type { EndpointHealth } from './health';
import type { WebhookEndpointRow } from './load';

/**
 * A webhook endpoint as the API shows it. Built field by field so neither a secret nor a
 * ciphertext (secret_enc, previous_secret_enc, authorization_enc) can leak: the custom header
 * shows only as `authorization_set`. The plaintext secret appears only where a use case hands
 * it over explicitly (web registration, reveal, rotate), through `secret`.
 */
export function toWebhookEndpointView(row: WebhookEndpointRow, extra: { health?: EndpointHealth; secret?: string; now?: Date } = {}) {
  const previousLive = row.previousValidUntil !== null && (!extra.now || row.previousValidUntil > extra.now);
  return {
    id: row.id,
    url: row.url,
    events: [...row.events],
    channels: row.allChannels ? ('all' as const) : [...row.channelIds],
    payload: row.payload,
    enabled: row.enabled,
    disabled_reason: row.enabled ? null : row.disabledReason,
    secret_pending_reveal: row.secretPendingReveal,
    previous_valid_until: previousLive ? row.previousValidUntil!.toISOString() : null,
    authorization_set: row.authorizationEnc !== null,
    created_by: row.createdByUserId,
    created_via: row.createdVia,
    version: row.version,
    enabled_at: row.enabledAt ? row.enabledAt.toISOString() : null,
    disabled_at: row.enabled || !row.disabledAt ? null : row.disabledAt.toISOString(),
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
    ...(extra.health ? { health: extra.health } : {}),
    ...(extra.secret !== undefined ? { secret: extra.secret } : {}),
  };
}

export type WebhookEndpointView = ReturnType<typeof toWebhookEndpointView>;
