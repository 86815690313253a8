import { rememberBounded } from '../bounded-memo';
import type { CredentialAuth } from './credentials';

/**
 * A credential's authentication in one account, remembered by this process once a post of its
 * passed a full authentication, so that its next posts need no authentication round trip
 * (docs/api.md "Authentication of a post"; docs/performance.md 'The post path').
 *
 * Remembering decides nothing on its own: a post that used a remembered authentication writes
 * only if its post statement finds, in the same snapshot as its write, that everything the
 * authentication decided on still holds (`AuthenticationToConfirm`); any other answer to such a
 * request is given only after a full authentication (apps/api http/remembered-auth.ts). So a
 * revocation, an expiry, a role change or an account's new state takes effect at once, as with
 * a full authentication on every call.
 */
export interface RememberedAuthentication {
  auth: CredentialAuth & { membership: NonNullable<CredentialAuth['membership']> };
  /** when this process last stamped the credential's last use (at most once a minute) */
  touchedAt: number;
}

/** The key is the secret's hash and the account: entries hold no secret. */
const MAX_ENTRIES = 10_000;
const remembered = new Map<string, RememberedAuthentication>();
const keyOf = (secretHash: string, accountId: string) => `${accountId} ${secretHash}`;

export function rememberAuthentication(secretHash: string, accountId: string, entry: RememberedAuthentication): void {
  rememberBounded(remembered, MAX_ENTRIES, keyOf(secretHash, accountId), entry);
}

export function rememberedAuthentication(secretHash: string, accountId: string): RememberedAuthentication | undefined {
  return remembered.get(keyOf(secretHash, accountId));
}

export function forgetAuthentication(secretHash: string, accountId: string): void {
  remembered.delete(keyOf(secretHash, accountId));
}

/** Tests: start cold. */
export function forgetAuthentications(): void {
  remembered.clear();
}

/**
 * What a post statement checks before it writes, for a post authenticated from memory: the
 * credential is neither revoked nor expired at `now` (the application's clock, as a full
 * authentication checks it), and the person's seat (role and identity) and the account (state and
 * plan) are what the authentication decided on. Credentials' other fields never change.
 */
export interface AuthenticationToConfirm {
  credentialId: string;
  now: Date;
  role: string;
  identityId: string;
  state: string;
  plan: string;
}

export function authenticationToConfirm(entry: RememberedAuthentication, now: Date): AuthenticationToConfirm {
  const { principal, membership } = entry.auth;
  return {
    credentialId: principal.id,
    now,
    role: membership.role!,
    identityId: membership.identityId!,
    state: membership.account!.state,
    plan: membership.account!.plan,
  };
}

/** Thrown by a post whose statement found the remembered authentication no longer holds: nothing was written. */
export class AuthenticationNotConfirmed extends Error {
  constructor() {
    super('the remembered authentication no longer holds');
    this.name = 'AuthenticationNotConfirmed';
  }
}
