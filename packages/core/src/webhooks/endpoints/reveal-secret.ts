import { and, eq, isNull, sql, webhookEndpoints, type Executor } from '@teamchat/db';
import { recordAudit } from '../../audit';
import { AppError, errors } from '../../errors';
import { isWebSession } from '../../principal';
import { openWebhookSecret } from '../endpoint-secrets';
import type { EndpointCall } from './context';
import { loadEndpoint, type WebhookEndpointRow } from './load';

/**
 * POST .../reveal (web session only): the signing secret of an endpoint a credential created,
 * exactly once. The flag is cleared by a conditional UPDATE, so two concurrent reveals cannot
 * both see it. Once revealed (or for an endpoint registered on the dashboard, whose secret was
 * shown at creation): 403 forbidden, `reason: secret_not_pending_reveal` (rotate for a new one).
 */
export async function revealSecret(tx: Executor, input: EndpointCall & { endpointId: string }): Promise<{ endpoint: WebhookEndpointRow; secret: string }> {
  const { deps, actor } = input;
  if (!isWebSession(actor)) throw errors.webSessionRequired('A signing secret is revealed on the dashboard only.');
  const [endpoint] = await tx
    .update(webhookEndpoints)
    .set({ secretPendingReveal: false, version: sql`${webhookEndpoints.version} + 1`, updatedAt: deps.now() })
    .where(and(
      eq(webhookEndpoints.id, input.endpointId), eq(webhookEndpoints.accountId, actor.accountId),
      isNull(webhookEndpoints.deletedAt), eq(webhookEndpoints.secretPendingReveal, true),
    ))
    .returning();
  if (!endpoint) {
    await loadEndpoint(tx, actor.accountId, input.endpointId); // 404 when there is no such endpoint
    throw new AppError('forbidden', 'This endpoint has no secret waiting to be revealed; it is shown only once. Rotate it to get a new one.', {
      reason: 'secret_not_pending_reveal',
    });
  }
  await recordAudit(tx, { accountId: actor.accountId, action: 'webhook.secret_revealed', actor, targetType: 'webhook_endpoint', targetId: endpoint.id });
  return { endpoint, secret: openWebhookSecret(deps.config, endpoint.secretEnc) };
}
