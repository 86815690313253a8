import { and, eq, webhookEndpoints } from '@teamchat/db';
import { AppError, type Deps } from '@teamchat/core';
import { webhookQueuesFor } from './queues';
import { deliverTestEvent } from './test-event';

/**
 * The test event that enabling delivers first (spec: Delivery behaviour rule 6), as the enable
 * answer shows it. `delivery_id` is null only when no attempt could be made at all.
 */
export interface EnableTestResult {
  delivery_id: string | null;
  status: 'delivered' | 'failed';
  response_status: number | null;
  latency_ms: number | null;
  error: string | null;
}

/**
 * Delivers the enable's test event after the enabling transaction has committed. The enable
 * stands whatever happens here: a failed test, or a test that could not even be attempted, is
 * reported in the answer (`status: failed` with an error) and logged, never thrown.
 *
 * The enabling transaction set the endpoint's hold (`holdUntil`, enableTestHoldMs): its event
 * deliveries wait while it lasts, so none reaches the receiver before the test. Once the test is
 * recorded, whatever its result, the hold is lifted and the account woken, for the deliveries
 * that waited to go at once (docs/webhooks.md "Enabling delivers a test event first").
 */
export async function deliverEnableTest(deps: Deps, input: { accountId: string; endpointId: string; holdUntil: Date | null }): Promise<EnableTestResult> {
  try {
    return await deliverTestEvent(deps, input);
  } catch (err) {
    const code = err instanceof AppError ? err.code : 'internal';
    deps.logger.warn('enable test delivery could not be made', { endpoint_id: input.endpointId, error: (err as Error).message });
    return { delivery_id: null, status: 'failed', response_status: null, latency_ms: null, error: code };
  } finally {
    if (input.holdUntil) await liftEnableTestHold(deps, input.accountId, input.endpointId, input.holdUntil);
  }
}

/**
 * Lifts the hold this enable set (only that one: an enable that came after holds on with its own),
 * then wakes the account's due rows. Neither failing throws: the hold then lapses at its time and
 * the held rows look again on their own (ENABLE_TEST_RECHECK_MS).
 */
async function liftEnableTestHold(deps: Deps, accountId: string, endpointId: string, holdUntil: Date): Promise<void> {
  try {
    const lifted = await deps.database.db
      .update(webhookEndpoints)
      .set({ enableTestUntil: null })
      .where(and(eq(webhookEndpoints.id, endpointId), eq(webhookEndpoints.enableTestUntil, holdUntil)))
      .returning({ id: webhookEndpoints.id });
    // The wake-up is not waited for: the answer needs nothing from it, and if it fails (Redis
    // away) the held rows look again on their own (ENABLE_TEST_RECHECK_MS).
    if (lifted.length > 0) {
      void webhookQueuesFor(deps).wakeAccounts([accountId]).catch((err: Error) =>
        deps.logger.warn('waking the account after an enable test failed; its rows look again on their own', { endpoint_id: endpointId, error: err.message }));
    }
  } catch (err) {
    deps.logger.warn('lifting an enable test\'s hold failed; it lapses at its time', { endpoint_id: endpointId, error: (err as Error).message });
  }
}
