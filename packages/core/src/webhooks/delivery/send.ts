import type { Config } from '../../config';
import { AppError } from '../../errors';
import { openWebhookSecret } from '../endpoint-secrets';
import { signatureHeaders } from '../signing';
import { vetWebhookUrl } from '../url-guard';
import type { DeliveryContext } from './store';
import type { PostResult, WebhookTransport } from './transport';

export const USER_AGENT = 'teamchat-webhooks/1';

/** The secrets that sign now: the current one, then the previous one during its 24 h overlap. */
export function signingSecrets(config: Pick<Config, 'secretsKey'>, endpoint: DeliveryContext['endpoint'], now: Date): string[] {
  const secrets = [openWebhookSecret(config, endpoint.secretEnc)];
  if (endpoint.previousSecretEnc && endpoint.previousValidUntil && endpoint.previousValidUntil > now) {
    secrets.push(openWebhookSecret(config, endpoint.previousSecretEnc));
  }
  return secrets;
}

/** Every header of one attempt (spec: Delivery headers, Signature; issue 11: Standard Webhooks too). */
export function deliveryHeaders(config: Pick<Config, 'secretsKey'>, ctx: DeliveryContext, now: Date): Record<string, string> {
  const { row, endpoint, body } = ctx;
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'user-agent': USER_AGENT,
    'x-service-event': row.eventType,
    'x-service-delivery': row.id,
    'x-service-attempt': String(row.attempt),
    ...signatureHeaders({ secrets: signingSecrets(config, endpoint, now), body, eventId: row.eventId, timestamp: Math.floor(now.getTime() / 1000) }),
  };
  if (endpoint.authorizationEnc) headers.authorization = `Bearer ${openWebhookSecret(config, endpoint.authorizationEnc)}`;
  return headers;
}

export interface SendResult extends Omit<PostResult, 'latencyMs'> {
  /** null when nothing was sent (the URL was refused before connecting) */
  latencyMs: number | null;
}

/**
 * One attempt on the wire: the URL guard runs again (the name is resolved now and every address
 * must be public), then the stored body is POSTed to the vetted address.
 */
export async function sendDelivery(
  config: Pick<Config, 'secretsKey' | 'webhookAllowedHosts'>,
  transport: WebhookTransport,
  ctx: DeliveryContext,
  now: Date,
): Promise<SendResult> {
  let target;
  try {
    target = await vetWebhookUrl(ctx.endpoint.url, { allowedHosts: config.webhookAllowedHosts });
  } catch (err) {
    if (err instanceof AppError) return { status: null, latencyMs: null, error: `url refused: ${String(err.extras.reason ?? 'invalid_url')}` };
    throw err;
  }
  return transport.post(target, deliveryHeaders(config, ctx, now), ctx.body);
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
