import { AppError, type Deps } from '@teamchat/core';
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
 */
export async function deliverEnableTest(deps: Deps, input: { accountId: string; endpointId: string }): Promise<EnableTestResult> {
  try {
    return await deliverTestEvent(deps, input);
  } catch (err) {
    const code = err instanceof AppError ? err.code : 'internal';
    deps.logger.warn('enable test delivery could not be made', { endpoint_id: input.endpointId, error: (err as Error).message });
    return { delivery_id: null, status: 'failed', response_status: null, latency_ms: null, error: code };
  }
}
