import { rememberBounded } from '../bounded-memo';
import type { CredentialAuth } from './credentials';

/**
 * A credential's authentication in one account, remembered by this process once a request to a
 * route served from memory (a message post, a page of messages) passed a full authentication, so
 * that its next ones need no authentication round trip (docs/api.md "Authentication from memory";
 * docs/performance.md 'The post path').
 *
 * Remembering decides nothing on its own: a request that used a remembered authentication writes
 * or reads only if its route's statement finds, in the same snapshot, that everything the
 * authentication decided on still holds (`authenticationConfirmedSql`); any other answer to such a
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
 * What a route's statement checks before it writes or reads, for a request authenticated from memory: the
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

/**
 * The check of an `AuthenticationToConfirm`, as a boolean SQL expression for the one statement of
 * a route served from memory: `$<first>`..`$<first+5>` are `confirmParams`'s six values (the
 * credential null: nothing to confirm, true), `account` the account's parameter.
 */
export function authenticationConfirmedSql(first: number, account: string): string {
  const [credential, now, role, identity, state, plan] = [0, 1, 2, 3, 4, 5].map((i) => `$${first + i}`);
  return authenticationConfirmedExpr({ credential, now, role, identity, state, plan }, account);
}

/**
 * The same check over any six SQL expressions (a batch of posts reads them from its rows'
 * columns: post-message-sql.ts `postWriteBatch`), each cast as the parameters are.
 */
export function authenticationConfirmedExpr(
  e: { credential: string; now: string; role: string; identity: string; state: string; plan: string },
  account: string,
): string {
  return `(${e.credential}::text IS NULL OR EXISTS (
      SELECT 1
        FROM credentials c
        JOIN members m ON m.account_id = ${account} AND m.user_id = c.user_id
        JOIN accounts a ON a.id = ${account}
       WHERE c.id = ${e.credential}::text AND c.revoked_at IS NULL AND (c.expires_at IS NULL OR c.expires_at > ${e.now}::timestamptz)
         AND m.role = ${e.role}::text AND m.identity_id = ${e.identity}::text AND a.state = ${e.state}::text AND a.plan = ${e.plan}::text))`;
}

/** The six parameters `authenticationConfirmedSql` reads, in its order (all null: none to confirm). */
export function confirmParams(c: AuthenticationToConfirm | undefined): unknown[] {
  return c ? [c.credentialId, c.now, c.role, c.identityId, c.state, c.plan] : [null, null, null, null, null, null];
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

/** Thrown by a route whose statement found the remembered authentication no longer holds: it wrote and answered nothing. */
export class AuthenticationNotConfirmed extends Error {
  constructor() {
    super('the remembered authentication no longer holds');
    this.name = 'AuthenticationNotConfirmed';
  }
}
