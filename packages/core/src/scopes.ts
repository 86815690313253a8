import { AppError, errors } from './errors';

/** Scopes exactly as the spec lists them (Authentication rules 5 and 6). */
export const ALWAYS_GRANTED = ['channels:read', 'channels:write'] as const;
export const GRANTABLE_SCOPES = [
  'files:manage', 'channels:manage', 'members:manage', 'groups:manage', 'identities:manage',
  'sessions:manage', 'webhooks:manage', 'notifications:manage', 'audit:read', 'account:manage',
  'search:manage', 'billing:read', 'artifacts:manage', 'credentials:manage', 'hosts:read', 'ai:read',
] as const;
export const ALL_SCOPES: readonly string[] = [...ALWAYS_GRANTED, ...GRANTABLE_SCOPES];

export type Role = 'owner' | 'admin' | 'member';
export const ROLES: readonly Role[] = ['owner', 'admin', 'member'];

/** Scopes a role may never hold, on any credential or session (rule 8). */
const ROLE_FORBIDDEN: Record<Role, readonly string[]> = {
  owner: [],
  admin: [],
  member: ['webhooks:manage'],
};

export function roleAllows(role: Role, scope: string): boolean {
  return !ROLE_FORBIDDEN[role].includes(scope);
}

export function isManager(role: Role): boolean {
  return role === 'owner' || role === 'admin';
}

/**
 * The credential that mints another one (an agent registered through an API key or agent
 * token): its effective scopes. A credential can never mint one with more than it holds.
 */
export interface Grantor {
  scopes: ReadonlySet<string> | readonly string[];
}

/**
 * The scopes a new credential actually carries: the requested ones, plus the always-granted
 * channel scopes, minus channels:write for a read-only credential. Throws on an unknown scope,
 * one the creator's role may not hold, or (when minted through a credential, `grantor`) one
 * that credential does not hold itself (403 insufficient_scope, reason scope_not_held).
 */
export function resolveCredentialScopes(requested: readonly string[], role: Role, readOnly: boolean, grantor?: Grantor): string[] {
  const held = grantor ? new Set(grantor.scopes) : null;
  for (const scope of requested) {
    if (!ALL_SCOPES.includes(scope)) throw errors.invalid(`Unknown scope: ${scope}.`, { field: 'scopes' });
    if (!roleAllows(role, scope)) {
      throw new AppError('forbidden', `A ${role}'s credential can never carry ${scope}.`, { reason: 'role_scope' });
    }
    if (held && !held.has(scope)) {
      throw new AppError('insufficient_scope', `This credential does not hold ${scope}, so it cannot grant it.`, {
        reason: 'scope_not_held', required_scope: scope,
      });
    }
  }
  const set = new Set<string>([...ALWAYS_GRANTED, ...requested]);
  if (readOnly) set.delete('channels:write');
  return ALL_SCOPES.filter((s) => set.has(s));
}

/** The scopes a web session holds: everything the person's role allows. */
export function sessionScopes(role: Role): string[] {
  return ALL_SCOPES.filter((s) => roleAllows(role, s));
}
