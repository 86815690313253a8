import type { WebhookEndpointRow } from './load';
import type { DisabledReason } from './rules';

/** What a PATCH does to an endpoint's enablement, and whom it tells. */
export interface EnablementChange {
  enabled: boolean;
  disabledReason: DisabledReason | null;
  /** set when the state changes: enabled_at on enabling, disabled_at on disabling */
  enabledAt?: Date;
  disabledAt?: Date | null;
  /** enabling clears the `failing` window */
  clearFailing: boolean;
  /** the endpoint goes from disabled to enabled: deliver a test event first (after commit) */
  enabling: boolean;
  /** notify owners and admins */
  notify: { kind: 'webhook.awaiting_enable' | 'webhook.disabled'; reason: string } | null;
}

/**
 * The rows of the spec's enablement table that a PATCH can trigger:
 * - a credential changes the URL, or switches payload to `text` → disabled `awaiting_enable`
 *   (whatever the state was; owners and admins notified), and this wins over anything else asked;
 * - `enabled: false` on an enabled endpoint → disabled `manual` (notified); on a disabled one
 *   nothing changes (the reason stays);
 * - `enabled: true` from a web session on a disabled endpoint (any reason) → enabled, enabled_at
 *   = now, a test event delivered first; on an enabled one nothing changes.
 * A credential asking `enabled: true` never reaches here (403 web_session_required).
 */
export function nextEnablement(
  row: Pick<WebhookEndpointRow, 'enabled' | 'disabledReason' | 'url' | 'payload'>,
  input: { web: boolean; url?: string; payload?: string; enabled?: boolean; now: Date },
): EnablementChange {
  const keep: EnablementChange = {
    enabled: row.enabled, disabledReason: row.enabled ? null : (row.disabledReason as DisabledReason | null),
    clearFailing: false, enabling: false, notify: null,
  };
  const urlChanged = input.url !== undefined && input.url !== row.url;
  const toText = input.payload === 'text' && row.payload !== 'text';
  if (!input.web && (urlChanged || toText)) {
    return {
      enabled: false, disabledReason: 'awaiting_enable', disabledAt: row.enabled || row.disabledReason !== 'awaiting_enable' ? input.now : undefined,
      clearFailing: false, enabling: false,
      notify: { kind: 'webhook.awaiting_enable', reason: urlChanged ? 'url_changed' : 'payload_text' },
    };
  }
  if (input.enabled === false && row.enabled) {
    return { enabled: false, disabledReason: 'manual', disabledAt: input.now, clearFailing: false, enabling: false, notify: { kind: 'webhook.disabled', reason: 'manual' } };
  }
  if (input.enabled === true && input.web && !row.enabled) {
    return { enabled: true, disabledReason: null, enabledAt: input.now, disabledAt: null, clearFailing: true, enabling: true, notify: null };
  }
  return keep;
}
