import { and, channels, eq, inArray, type Executor } from '@teamchat/db';
import type { Config } from '../../config';
import { errors } from '../../errors';
import { vetWebhookUrl } from '../url-guard';
import type { ChannelsFilter } from './rules';

/**
 * The URL guard at registration and on every URL change: a refused URL is 400 invalid_request,
 * `field: url`, with the guard's reason (invalid_url, not_https, private_address, unresolvable).
 * Returns the URL as given (the guard's parse only checks it).
 */
export async function checkEndpointUrl(config: Pick<Config, 'webhookAllowedHosts'>, url: string): Promise<string> {
  await vetWebhookUrl(url, { allowedHosts: config.webhookAllowedHosts });
  return url;
}

/**
 * `channels`: `all`, or ids of regular channels of this account (a DM is covered only by `all`).
 * An unknown id is 400 invalid_request, `field: channels`, `reason: unknown_channel`, naming it.
 */
export async function checkChannels(db: Executor, accountId: string, filter: ChannelsFilter): Promise<{ allChannels: boolean; channelIds: string[] }> {
  if (filter === 'all') return { allChannels: true, channelIds: [] };
  const ids = [...new Set(filter)];
  const found = await db
    .select({ id: channels.id })
    .from(channels)
    .where(and(eq(channels.accountId, accountId), eq(channels.kind, 'channel'), inArray(channels.id, ids)));
  const known = new Set(found.map((r) => r.id));
  const unknown = ids.filter((id) => !known.has(id));
  if (unknown.length > 0) {
    throw errors.invalid(`Unknown channel: ${unknown[0]}.`, { field: 'channels', reason: 'unknown_channel', channel_ids: unknown });
  }
  return { allChannels: false, channelIds: ids };
}

/**
 * What only a web session may ask of an endpoint, on register and change alike (spec: a
 * credential requesting `enabled: true` → 403 forbidden, web_session_required; the custom header
 * is set on the dashboard only).
 */
export function refuseWebOnlyFields(web: boolean, input: { enabled?: boolean; authorization?: string | null }): void {
  if (web) return;
  if (input.enabled === true) {
    throw errors.webSessionRequired('Only a signed-in owner or admin can enable a webhook endpoint, on the dashboard.');
  }
  if (input.authorization !== undefined) {
    throw errors.webSessionRequired('The custom Authorization header is set on the dashboard only.');
  }
}
