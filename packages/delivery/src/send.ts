import type { PostResult, WebhookTransport } from './transport';
import { AppError, devReceiverFor, openForDelivery, signatureHeaders, vetWebhookUrl, type Config, type DeliveryContext, type VettedUrl } from '@teamchat/core';

export const USER_AGENT = 'teamchat-webhooks/1';

/** The secrets that sign now: the current one, then the previous one during its 24 h overlap. */
export function signingSecrets(config: Pick<Config, 'secretsKey'>, endpoint: DeliveryContext['endpoint'], now: Date): string[] {
  const secrets = [openForDelivery(config, endpoint.secretEnc)];
  if (endpoint.previousSecretEnc && endpoint.previousValidUntil && endpoint.previousValidUntil > now) {
    secrets.push(openForDelivery(config, endpoint.previousSecretEnc));
  }
  return secrets;
}

/**
 * What every attempt to one endpoint needs and does not depend on the row: the URL vetted now
 * (the name resolved, every address public) or the reason it was refused, and the opened
 * signing secrets and custom header. A batch round prepares each endpoint once for the attempts
 * it sends together; a single attempt prepares right before its own.
 */
export interface PreparedEndpoint {
  target: VettedUrl | null;
  /** the log's error when the guard refused the URL (nothing is sent) */
  refusal: string | null;
  secrets: string[];
  authorization: string | null;
}

export async function prepareEndpoint(
  config: Pick<Config, 'secretsKey' | 'webhookAllowedHosts' | 'webhookDevReceiversDir'>,
  endpoint: DeliveryContext['endpoint'],
  now: Date,
): Promise<PreparedEndpoint> {
  try {
    // A development receiver of `webhooks:listen` (never in production): its loopback literal is
    // exempt for this endpoint only, and its CA is trusted for this target only.
    const dev = devReceiverFor(config, endpoint);
    const target = await vetWebhookUrl(endpoint.url, { allowedHosts: dev ? [...config.webhookAllowedHosts, dev.host] : config.webhookAllowedHosts });
    if (dev) target.ca = dev.ca;
    const authorization = endpoint.authorizationEnc ? openForDelivery(config, endpoint.authorizationEnc) : null;
    return { target, refusal: null, secrets: signingSecrets(config, endpoint, now), authorization };
  } catch (err) {
    if (err instanceof AppError) return { target: null, refusal: `url refused: ${String(err.extras.reason ?? 'invalid_url')}`, secrets: [], authorization: null };
    throw err;
  }
}

/** Every header of one attempt (spec: Delivery headers, Signature; Standard Webhooks too: docs/webhooks.md). */
function headersFor(ctx: DeliveryContext, p: Pick<PreparedEndpoint, 'secrets' | 'authorization'>, now: Date): Record<string, string> {
  const { row, body } = ctx;
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'user-agent': USER_AGENT,
    'x-service-event': row.eventType,
    'x-service-delivery': row.id,
    'x-service-attempt': String(row.attempt),
    ...signatureHeaders({ secrets: p.secrets, body, eventId: row.eventId, timestamp: Math.floor(now.getTime() / 1000) }),
  };
  if (p.authorization) headers.authorization = `Bearer ${p.authorization}`;
  return headers;
}

export interface SendResult extends Omit<PostResult, 'latencyMs'> {
  /** null when nothing was sent (the URL was refused before connecting) */
  latencyMs: number | null;
}

/** One attempt on the wire with its endpoint prepared: the stored body POSTed to the vetted address. */
export async function sendPrepared(transport: WebhookTransport, ctx: DeliveryContext, p: PreparedEndpoint, now: Date): Promise<SendResult> {
  if (!p.target) return { status: null, latencyMs: null, error: p.refusal };
  return transport.post(p.target, headersFor(ctx, p, now), ctx.body);
}

/**
 * One attempt on the wire: the URL guard runs again (the name's answer at most RESOLUTION_REUSE_MS
 * old, and every address must be public), then the stored body is POSTed to the vetted address.
 */
export async function sendDelivery(
  config: Pick<Config, 'secretsKey' | 'webhookAllowedHosts' | 'webhookDevReceiversDir'>,
  transport: WebhookTransport,
  ctx: DeliveryContext,
  now: Date,
): Promise<SendResult> {
  return sendPrepared(transport, ctx, await prepareEndpoint(config, ctx.endpoint, now), now);
}

export function isSuccess(status: number | null): boolean {
  return status !== null && status >= 200 && status < 300;
}

/** The error text the log shows for an answer that was not 2xx. */
export function answerError(status: number | null, transportError: string | null): string | null {
  if (transportError) return transportError;
  if (status === null || isSuccess(status)) return null;
  if (status >= 300 && status < 400) return `redirect (${status}) not followed`;
  if (status === 410) return 'gone (410)';
  return `receiver answered ${status}`;
}
