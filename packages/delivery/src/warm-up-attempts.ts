import { claimMs, generateSigningSecret, newId, sealWebhookSecret, type DeliveryContext, type Deps, type VettedUrl } from '@teamchat/core';
import { planFanOut } from './fan-out';
import { record } from './pipeline';
import { prepareEndpoint, sendPrepared, signingSecrets } from './send';
import type { FanOutRead } from './statements';
import { WebhookTransport } from './transport';
import { startWarmUpReceiver } from './warm-up-receiver';

/**
 * Attempts the worker makes at warm-up, before it is ready: enough for V8 to compile the
 * per-delivery code (render, sign, the HTTP client and its parser, the record statements'
 * JavaScript) before the first real delivery pays for it. Measured: without them the first
 * ~500 ms of deliveries to a new endpoint on a fresh worker took 70-170 ms from fan-out to
 * receiver, against ~12 ms once warm (docs/performance.md "Warm-ups that run the real paths").
 */
export const WARM_UP_ATTEMPTS = 400;
/** Warm-up attempts on the wire at once (several connections, as real load opens). */
const WARM_UP_CONCURRENCY = 8;

/**
 * Runs WARM_UP_ATTEMPTS attempts through the real stages on rows that exist only in memory:
 * fan-out's plan (match, render) over an event read made here, the URL guard, then send to a
 * receiver of this process's own (HTTPS on loopback with warm-up-certificate.ts, started here and
 * closed after, so the TLS client's code runs too; the guard's verdict is not used for it, so
 * nothing is ever sent anywhere else), then the record stage, whose statements are fenced on
 * rows that do not exist in the database: they change nothing. One in four answers is a 500,
 * so the failure path's record runs too. Nothing is written to PostgreSQL or Redis, no unit is
 * charged, no metric counts an attempt. Answers the requests the warm-up's receiver answered; an
 * attempt that fails otherwise (no answer, an error) stops the others and fails the step.
 */
export async function warmUpAttempts(deps: Deps, attempts = WARM_UP_ATTEMPTS): Promise<number> {
  const receiver = await startWarmUpReceiver((n) => (n % 4 === 0 ? 500 : 200));
  // A transport as the engine's own (the pipeline's send compiled for it), sent to the receiver's target only.
  const transport = new WebhookTransport(deps.config);
  const endpoint = warmUpEndpoint(deps);
  try {
    // The first failure stops every lane; the transport and the receiver close only once all stopped.
    let next = 0;
    let failure: Error | null = null;
    const lane = async () => {
      while (!failure && next < attempts) {
        next += 1;
        await attempt(deps, transport, receiver.target, endpoint, next).catch((err: Error) => {
          failure ??= err;
        });
      }
    };
    await Promise.all(Array.from({ length: WARM_UP_CONCURRENCY }, lane));
    if (failure) throw failure;
    return receiver.answered();
  } finally {
    await transport.close();
    await receiver.close();
  }
}

async function attempt(deps: Deps, transport: WebhookTransport, target: VettedUrl, endpoint: DeliveryContext['endpoint'], n: number): Promise<void> {
  const now = deps.now();
  const event = warmUpEvent(endpoint, n, now);
  const plan = await planFanOut(deps, [event.id], [event]);
  const row = plan.rows[0];
  const ctx: DeliveryContext = {
    row: {
      id: row.id, seq: 0, accountId: row.accountId, endpointId: row.endpointId, eventId: row.eventId, eventType: row.eventType, bodyId: row.bodyId,
      kind: 'event', chainId: row.id, attempt: 1, status: 'pending', nextRetryAt: null, claimedUntil: null, responseStatus: null, latencyMs: null, error: null,
      eventCreatedAt: row.eventCreatedAt, createdAt: now, attemptedAt: null,
    },
    endpoint,
    account: { id: endpoint.accountId, plan: 'free', state: 'active' },
    body: row.body,
  };
  // The guard as a real attempt runs it (its verdict on the row's URL is not used: in production
  // it refuses localhost); the send, signed with the endpoint's secret, goes to the warm-up's receiver only.
  await prepareEndpoint(deps.config, endpoint, now);
  const sent = await sendPrepared(transport, ctx, { target, refusal: null, secrets: signingSecrets(deps.config, endpoint, now), authorization: null }, now);
  if (sent.status === null) throw new Error(`a warm-up attempt got no answer: ${sent.error}`);
  await record(deps, ctx, new Date(now.getTime() + claimMs(deps.config)), sent);
}

/**
 * The endpoint of the warm-up's rows. Its URL's name resolves from the hosts file (no network
 * lookup) to loopback, which the guard refuses unless WEBHOOK_ALLOWED_HOSTS lets it; either way
 * the attempts go to the warm-up's own receiver, never to this URL.
 */
function warmUpEndpoint(deps: Deps): DeliveryContext['endpoint'] {
  const now = deps.now();
  return {
    id: newId('webhook'), seq: 0, accountId: newId('account'), createdByUserId: newId('user'), createdVia: 'api_key',
    url: 'https://localhost/warm-up', events: ['message.posted'], allChannels: true, channelIds: [], payload: 'text',
    enabled: true, disabledReason: null, enabledAt: now, disabledAt: null,
    secretEnc: sealWebhookSecret(deps.config, generateSigningSecret()), secretPendingReveal: false, previousSecretEnc: null, previousValidUntil: null, authorizationEnc: null,
    failingSince: null, lastSuccessAt: null, lastFailureAt: null, enableTestUntil: null, version: 1, createdAt: now, updatedAt: now, deletedAt: null,
  };
}

/** A `message.posted` event as the fan-out's read gives it, with the warm-up endpoint as its account's one endpoint. */
function warmUpEvent(endpoint: DeliveryContext['endpoint'], n: number, now: Date): FanOutRead {
  const channel = newId('channel');
  return {
    id: newId('event'), seq: String(n), account_id: endpoint.accountId, type: 'message.posted', channel_id: channel, created_at: now, relayed_at: null, mirrored: false,
    data: {
      channel: { id: channel, kind: 'channel' }, ts: `${Math.floor(now.getTime() / 1000)}.${String(n).padStart(6, '0')}`, author: newId('identity'), thread_ts: null,
      session: null, links_count: 0, attachments_count: 0, mentions: [], broadcast: false,
      content: { text: `warm-up message ${n}: an ordinary line of chat`, links: [] },
    },
    endpoints: [{ id: endpoint.id, payload: endpoint.payload, events: endpoint.events, all_channels: endpoint.allChannels, channel_ids: endpoint.channelIds }],
  };
}
