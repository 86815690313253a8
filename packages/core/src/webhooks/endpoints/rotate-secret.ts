import { eq, sql, webhookEndpoints, type Executor } from '@teamchat/db';
import { recordAudit } from '../../audit';
import { errors } from '../../errors';
import { isWebSession } from '../../principal';
import { sealWebhookSecret } from '../endpoint-secrets';
import { generateSigningSecret } from '../signing';
import type { EndpointCall } from './context';
import { loadEndpoint, type WebhookEndpointRow } from './load';
import { ROTATION_OVERLAP_MS } from './rules';

/**
 * POST .../rotate (web session only, spec: Secret rotation): a new signing secret, returned
 * once in this answer; the current one becomes the previous secret and keeps signing alongside
 * for 24 hours, until `previous_valid_until`. Rotating again during an overlap replaces the
 * previous secret with the one just superseded (at most two secrets ever sign). Any secret
 * still waiting to be revealed is superseded too (`secret_pending_reveal` false).
 */
export async function rotateSecret(tx: Executor, input: EndpointCall & { endpointId: string }): Promise<{ endpoint: WebhookEndpointRow; secret: string }> {
  const { deps, actor } = input;
  if (!isWebSession(actor)) throw errors.webSessionRequired('A signing secret is rotated on the dashboard only.');
  const row = await loadEndpoint(tx, actor.accountId, input.endpointId, { forUpdate: true });
  const now = deps.now();
  const secret = generateSigningSecret();
  const [endpoint] = await tx
    .update(webhookEndpoints)
    .set({
      secretEnc: sealWebhookSecret(deps.config, secret),
      previousSecretEnc: row.secretEnc,
      previousValidUntil: new Date(now.getTime() + ROTATION_OVERLAP_MS),
      secretPendingReveal: false,
      version: sql`${webhookEndpoints.version} + 1`,
      updatedAt: now,
    })
    .where(eq(webhookEndpoints.id, row.id))
    .returning();
  await recordAudit(tx, {
    accountId: actor.accountId, action: 'webhook.secret_rotated', actor, targetType: 'webhook_endpoint', targetId: row.id,
    data: { previous_valid_until: endpoint.previousValidUntil!.toISOString() },
  });
  return { endpoint, secret };
}
