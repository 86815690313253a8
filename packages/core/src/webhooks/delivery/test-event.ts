import type { Deps } from '../../context';

/** The answer of POST .../webhooks/{endpointId}/test, and of the test event that enabling delivers first. */
export interface TestDeliveryResult {
  /** the attempt's id (its X-Service-Delivery), a row of the delivery log */
  delivery_id: string;
  status: 'delivered' | 'failed';
  /** the receiver's HTTP status, or null when there was no answer */
  response_status: number | null;
  latency_ms: number | null;
  error: string | null;
}

/**
 * Delivers a `test` event to the endpoint now (enabled or not), in this process, and answers the
 * result. Never retried (spec: a failed test event is `failed`). Costs one call unit on the seat
 * of the endpoint's creator like every attempt. Rate limits (10/min per endpoint) are the route's.
 */
export async function deliverTestEvent(deps: Deps, input: { accountId: string; endpointId: string }): Promise<TestDeliveryResult> {
  void deps;
  void input;
  throw new Error('deliverTestEvent: not implemented yet (wh-delivery)');
}
