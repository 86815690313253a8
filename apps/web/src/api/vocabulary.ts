/**
 * Names the API defines, for building forms (the API still decides: it refuses what is not
 * allowed and the app shows its message). They follow the spec's tables: Subscribable events,
 * Authentication rule 6, Webhook delivery status.
 */
export const EVENT_TYPES = [
  'message.posted', 'message.edited', 'message.deleted', 'thread.replied', 'mention', 'dm.received',
  'channel.created', 'channel.deleted', 'reaction.added', 'reaction.removed', 'session.evicted', 'test',
] as const;

export const GRANTABLE_SCOPES = [
  'files:manage', 'channels:manage', 'members:manage', 'groups:manage', 'identities:manage',
  'sessions:manage', 'webhooks:manage', 'notifications:manage', 'audit:read', 'account:manage',
  'search:manage', 'billing:read', 'artifacts:manage', 'credentials:manage', 'hosts:read', 'ai:read',
] as const;

/** Scopes a role can never grant (spec: Authentication rule 8). */
export function scopesFor(role: string | undefined): string[] {
  return GRANTABLE_SCOPES.filter((s) => !(role === 'member' && s === 'webhooks:manage'));
}

export const DELIVERY_STATUS_NAMES = ['pending', 'delivered', 'retrying', 'failed', 'dead'] as const;
