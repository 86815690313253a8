import { asc, eq, webhookDeliveries, webhookEndpoints, type Executor } from '@teamchat/db';
import { deliveryLogFloor, deliveryLogPartitions, ensureDeliveryLogPartitions, generateSigningSecret, newId, sealWebhookSecret, type Config } from '@teamchat/core';
import { startHarness, type Harness } from './harness';
import { testCertificates } from './https-receiver';

/**
 * Webhook test helpers: a harness whose config trusts the throwaway test CA and exempts the
 * loopback names, with a compressed retry schedule; endpoint rows written directly (the
 * endpoints API is not what these tests exercise), their secrets sealed like the real ones.
 */
export const TEST_RETRY_SCHEDULE_MS = [200, 200, 200];
export const TEST_TIMEOUT_MS = 2500;

export function webhookConfig(overrides: Partial<Config> = {}): Partial<Config> {
  return {
    webhookAllowedHosts: ['localhost', '127.0.0.1'],
    webhookCaFile: testCertificates().caFile,
    webhookRetryScheduleMs: TEST_RETRY_SCHEDULE_MS,
    webhookTimeoutMs: TEST_TIMEOUT_MS,
    ...overrides,
  };
}

export function startWebhookHarness(overrides: Partial<Config> = {}): Promise<Harness> {
  return startHarness(webhookConfig(overrides));
}

export interface EndpointInput {
  accountId: string;
  createdByUserId: string;
  url: string;
  events?: string[];
  channels?: 'all' | string[];
  payload?: 'pointers' | 'text';
  enabled?: boolean;
  enabledAt?: Date;
  authorization?: string;
  previousSecret?: string;
  previousValidUntil?: Date;
}

export const ALL_EVENTS = ['message.posted', 'message.edited', 'message.deleted', 'thread.replied', 'mention', 'dm.received', 'reaction.added', 'reaction.removed'];

export async function createEndpointRow(h: Harness, input: EndpointInput): Promise<{ id: string; secret: string }> {
  const secret = generateSigningSecret();
  const id = newId('webhook');
  const enabled = input.enabled ?? true;
  await h.deps.database.db.insert(webhookEndpoints).values({
    id,
    accountId: input.accountId,
    createdByUserId: input.createdByUserId,
    createdVia: 'web_session',
    url: input.url,
    events: input.events ?? ALL_EVENTS,
    allChannels: (input.channels ?? 'all') === 'all',
    channelIds: input.channels === 'all' || !input.channels ? [] : input.channels,
    payload: input.payload ?? 'pointers',
    enabled,
    disabledReason: enabled ? null : 'manual',
    enabledAt: enabled ? (input.enabledAt ?? new Date(Date.now() - 1000)) : null,
    secretEnc: sealWebhookSecret(h.deps.config, secret),
    previousSecretEnc: input.previousSecret ? sealWebhookSecret(h.deps.config, input.previousSecret) : null,
    previousValidUntil: input.previousValidUntil ?? null,
    authorizationEnc: input.authorization ? sealWebhookSecret(h.deps.config, input.authorization) : null,
  });
  return { id, secret };
}

export async function deliveriesOf(h: Harness, endpointId: string) {
  return h.deps.database.db.select().from(webhookDeliveries).where(eq(webhookDeliveries.endpointId, endpointId)).orderBy(asc(webhookDeliveries.seq));
}

export async function endpointRow(h: Harness, endpointId: string) {
  const [row] = await h.deps.database.db.select().from(webhookEndpoints).where(eq(webhookEndpoints.id, endpointId));
  return row;
}

/**
 * Polls `check` until it returns a truthy value (or throws after `timeoutMs`). `explain`, if
 * given, is asked once on the timeout for what the state is then, and its answer goes in the
 * error: a failure then says why it waited in vain, not only that it did.
 */
export async function eventually<T>(
  check: () => Promise<T | null | undefined | false>,
  timeoutMs = 20_000,
  what = 'condition',
  explain?: () => Promise<string>,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) {
      const state = explain ? `; ${await explain().catch((err: Error) => `(explaining failed: ${err.message})`)}` : '';
      throw new Error(`timed out waiting for ${what}${last ? `: ${(last as Error).message}` : ''}${state}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The delivery log's weekly partitions wholly older than the 30 days the log keeps: the ones the purge drops. */
export async function expiredLogWeeks(db: Executor): Promise<Array<{ name: string; from: Date; to: Date }>> {
  const floor = deliveryLogFloor(new Date()).getTime();
  return (await deliveryLogPartitions(db)).filter((p) => p.to.getTime() <= floor);
}

/**
 * Makes a weekly partition of the log wholly older than the 30 days: the week holding 38 days
 * ago, which ends 31 days ago at the latest. A fresh database's own first week (the migration's,
 * the one holding 35 days ago) lies wholly outside the 30 days only from Wednesday on (UTC).
 */
export async function makeExpiredLogWeek(db: Executor): Promise<void> {
  await ensureDeliveryLogPartitions(db, new Date(deliveryLogFloor(new Date()).getTime() - 8 * 86_400_000));
}
