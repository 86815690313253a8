import type { Deps } from '../../context';
import { notifyAccountAdmins, urlOrigin } from '../../notifications/notify-admins';

/**
 * Tells the account's owners and admins that an endpoint was disabled automatically
 * (`failing`, `gone`, `slow`): a notification row each and, with SMTP_URL, an email. The notice
 * names the endpoint, the URL's origin (never its path or query) and the reason.
 */
export async function notifyEndpointDisabled(
  deps: Deps,
  input: { accountId: string; endpointId: string; url: string; reason: string },
): Promise<void> {
  deps.logger.warn('webhook endpoint disabled', { account_id: input.accountId, endpoint_id: input.endpointId, reason: input.reason });
  await notifyAccountAdmins(deps, {
    accountId: input.accountId,
    kind: 'webhook.disabled',
    data: { endpoint_id: input.endpointId, url_origin: urlOrigin(input.url), reason: input.reason },
  });
}
