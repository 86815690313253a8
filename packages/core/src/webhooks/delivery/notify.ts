import type { Deps } from '../../context';

/**
 * Tells the account's owners and admins that an endpoint was disabled automatically. Until
 * `notifyAccountAdmins` (packages/core/src/notifications, wh-endpoints) is in main this only logs.
 */
export async function notifyEndpointDisabled(
  deps: Deps,
  input: { accountId: string; endpointId: string; url: string; reason: string },
): Promise<void> {
  deps.logger.warn('webhook endpoint disabled', { account_id: input.accountId, endpoint_id: input.endpointId, reason: input.reason });
}
