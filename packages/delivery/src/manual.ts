import { and, eq, isNull, webhookEndpoints, type Executor } from '@teamchat/db';
import { attemptOne, type AttemptOutcome } from './pipeline';
import { webhookQueuesFor } from './queues';
import { WebhookTransport } from './transport';
import { AppError, errors, type Deps } from '@teamchat/core';

/**
 * Deliveries sent now, in the calling process (test events and replays): the same attempt as
 * the worker's, waiting up to the receiver's answer time for an in-flight slot.
 */
const transports = new WeakMap<object, WebhookTransport>();

/** The process's transport (keep-alive pools) for deliveries sent now, one per configuration. */
export function manualTransport(deps: Pick<Deps, 'config'>): WebhookTransport {
  let t = transports.get(deps.config);
  if (!t) {
    t = new WebhookTransport(deps.config);
    transports.set(deps.config, t);
  }
  return t;
}

export async function requireEndpoint(db: Executor, accountId: string, endpointId: string) {
  const [endpoint] = await db
    .select()
    .from(webhookEndpoints)
    .where(and(eq(webhookEndpoints.id, endpointId), eq(webhookEndpoints.accountId, accountId), isNull(webhookEndpoints.deletedAt)));
  if (!endpoint) throw errors.notFound('webhook endpoint');
  return endpoint;
}

/**
 * An endpoint a test event or replay may be sent to now. One awaiting enable has a URL set by a
 * credential that no person has vetted yet (spec: it "delivers nothing"): 403 forbidden,
 * `reason: awaiting_enable`, so a key cannot point an endpoint at its own server and replay the
 * log (text bodies, the custom header) there. Other disabled endpoints still take them.
 */
export async function requireSendableEndpoint(db: Executor, accountId: string, endpointId: string) {
  const endpoint = await requireEndpoint(db, accountId, endpointId);
  if (!endpoint.enabled && endpoint.disabledReason === 'awaiting_enable') {
    throw new AppError('forbidden', 'This endpoint awaits an owner or admin enabling it on the dashboard; until then nothing is sent to it, tests and replays included.', {
      reason: 'awaiting_enable',
    });
  }
  return endpoint;
}

export interface ManualResult {
  delivery_id: string;
  status: 'pending' | 'delivered' | 'retrying' | 'failed' | 'dead';
  response_status: number | null;
  latency_ms: number | null;
  error: string | null;
  next_retry_at: string | null;
}

/** Why an attempt waits (pipeline.ts). */
export type WaitReason = Extract<AttemptOutcome, { kind: 'wait' }>['reason'];

/** A manual attempt: the answer's shape, and why it waits when it does (never in the answer). */
export interface ManualAttempt {
  result: ManualResult;
  waitReason: WaitReason | null;
}

/** What a manual delivery that must wait says, by the reason it waits (others: `waiting: <reason>`). */
const WAITING: Readonly<Partial<Record<WaitReason, string>>> = {
  call_units_spent: 'waiting: the seat of the endpoint\'s creator has spent its call units for today',
  slots_unavailable: 'waiting: Redis is unavailable, so no delivery can take an in-flight slot; it is sent once Redis is back',
  units_unavailable: 'waiting: Redis is unavailable, so its call unit could not be charged; it is sent once Redis is back',
};

/** Runs the row's attempt now; a row that must wait (units spent) is handed to the worker. */
export async function attemptNow(deps: Deps, deliveryId: string): Promise<ManualAttempt> {
  const outcome: AttemptOutcome = await attemptOne(deps, manualTransport(deps), deliveryId, deps.config.webhookTimeoutMs);
  if (outcome.kind === 'done') {
    const result: ManualResult = {
      delivery_id: deliveryId, status: outcome.status, response_status: outcome.responseStatus, latency_ms: outcome.latencyMs,
      error: outcome.error, next_retry_at: outcome.nextRetryAt?.toISOString() ?? null,
    };
    return { result, waitReason: null };
  }
  if (outcome.kind === 'wait') {
    // Not waited for: the answer needs nothing from it, and if it fails (Redis away) the sweep finds the open row.
    void webhookQueuesFor(deps).enqueueDelivery(deliveryId, outcome.until).catch((err: Error) =>
      deps.logger.warn('enqueueing a waiting delivery failed; the sweep will', { delivery_id: deliveryId, error: err.message }));
    const result: ManualResult = {
      delivery_id: deliveryId, status: outcome.reason === 'call_units_spent' ? 'retrying' : 'pending', response_status: null, latency_ms: null,
      error: WAITING[outcome.reason] ?? `waiting: ${outcome.reason}`,
      next_retry_at: outcome.until.toISOString(),
    };
    return { result, waitReason: outcome.reason };
  }
  throw new Error(`delivery ${deliveryId} vanished before its attempt (${outcome.reason})`);
}
