import { and, credentials, eq, getTableColumns, identities, members, runStatement, sql, statement, type Executor } from '@teamchat/db';
import {
  MEMBERSHIP_COLUMNS, membershipFrom, scopesCarriedNow, type AccountMembership, type MembershipColumns,
} from '../accounts/directory';
import { seqKeyset } from '../pagination';
import { recordAudit } from '../audit';
import { hashSecret } from '../crypto';
import { errors } from '../errors';
import { newId } from '../ids';
import type { Actor, Principal } from '../principal';
import { resolveCredentialScopes, type Grantor, type Role } from '../scopes';
import { displayPrefix, newSecret } from './tokens';

type CredentialRow = typeof credentials.$inferSelect;

/** Issues an API key for a person's seat. The secret is returned once and only its hash stored. */
export async function createApiKey(
  tx: Executor,
  input: { accountId: string; userId: string; identityId: string; role: Role; scopes: string[]; readOnly: boolean; expiresAt?: Date; actor?: Actor },
) {
  const scopes = resolveCredentialScopes(input.scopes, input.role, input.readOnly);
  const key = newSecret('api_key');
  const id = newId('credential');
  await tx.insert(credentials).values({
    id, accountId: input.accountId, kind: 'api_key', userId: input.userId, identityId: input.identityId,
    prefix: displayPrefix(key), secretHash: hashSecret(key), scopes, readOnly: input.readOnly, expiresAt: input.expiresAt,
  });
  await recordAudit(tx, {
    accountId: input.accountId, action: 'api_key.created', actor: input.actor, via: 'cli',
    targetType: 'api_key', targetId: id, data: { user_id: input.userId, scopes, read_only: input.readOnly },
  });
  return { key_id: id, key, scopes };
}

/**
 * Registers an agent identity and issues its token. The agent spends the approving person's
 * seat, and can hold only scopes that person's role allows. Registered through a credential
 * (`grantor`), it holds at most that credential's scopes, and a read-only credential makes a
 * read-only agent (docs/api.md, 'Agent scope rule') and an expiring one an agent that expires with it; a web
 * session or the operator CLI grants up to the role.
 */
export async function createAgent(
  tx: Executor,
  input: {
    accountId: string; name: string; approvedByUserId: string; approverRole: Role; scopes: string[]; actor?: Actor;
    grantor?: Grantor & { readOnly: boolean; expiresAt?: Date | null };
  },
) {
  const readOnly = input.grantor?.readOnly ?? false;
  // Never a longer life than the credential that mints it (null: it does not expire).
  const expiresAt = input.grantor?.expiresAt ?? null;
  const scopes = resolveCredentialScopes(input.scopes, input.approverRole, readOnly, input.grantor);
  const [identity] = await tx
    .insert(identities)
    .values({ id: newId('identity'), accountId: input.accountId, kind: 'agent', name: input.name, approvedByUserId: input.approvedByUserId })
    .returning();
  const token = newSecret('agent_token');
  const id = newId('credential');
  await tx.insert(credentials).values({
    id, accountId: input.accountId, kind: 'agent_token', userId: input.approvedByUserId, identityId: identity.id,
    prefix: displayPrefix(token), secretHash: hashSecret(token), scopes, readOnly, expiresAt,
  });
  await recordAudit(tx, {
    accountId: input.accountId, action: 'agent.created', actor: input.actor, via: 'cli',
    targetType: 'identity', targetId: identity.id, data: { approved_by: input.approvedByUserId, scopes, read_only: readOnly, credential_id: id, expires_at: expiresAt?.toISOString() ?? null },
  });
  return { identity, credentialId: id, token, scopes, readOnly, expiresAt };
}

export async function revokeCredential(tx: Executor, input: { accountId: string; credentialId: string; actor?: Actor }) {
  const rows = await tx
    .update(credentials)
    .set({ revokedAt: sql`coalesce(${credentials.revokedAt}, now())` })
    .where(and(eq(credentials.id, input.credentialId), eq(credentials.accountId, input.accountId)))
    .returning({ id: credentials.id });
  if (!rows.length) throw errors.notFound('API key');
  await recordAudit(tx, {
    accountId: input.accountId, action: 'api_key.revoked', actor: input.actor, via: 'cli', targetType: 'api_key', targetId: input.credentialId,
  });
}

/** Last-used stamps are written at most once a minute per credential, off the request's path. */
const LAST_USED_GRANULARITY_MS = 60_000;

interface CredentialAuthRow extends MembershipColumns {
  id: string;
  kind: string;
  user_id: string;
  account_id: string;
  identity_id: string;
  scopes: string[];
  read_only: boolean;
  expires_at: Date | null;
  revoked_at: Date | null;
  last_used_at: Date | null;
}

/**
 * The credential by its secret's hash and, in the same round trip, the account of the path with
 * the credential's person's seat in it ($2 null: no account asked for).
 */
const credentialBySecret = statement<CredentialAuthRow>('auth_credential', `
  SELECT c.id, c.kind, c.user_id, c.account_id, c.identity_id, c.scopes, c.read_only,
         c.expires_at, c.revoked_at, c.last_used_at, ${MEMBERSHIP_COLUMNS}
    FROM credentials c
    LEFT JOIN accounts a ON a.id = $2::text
    LEFT JOIN members m ON m.account_id = a.id AND m.user_id = c.user_id
   WHERE c.secret_hash = $1`);

const touchCredential = statement('auth_credential_touch', 'UPDATE credentials SET last_used_at = $2 WHERE id = $1');

export interface CredentialAuth {
  principal: Principal;
  /** the seat in `accountId`, when one was asked for */
  membership?: AccountMembership;
}

/**
 * Resolves a bearer secret to a principal, and the caller's seat in `accountId` if given, in one
 * round trip; null when unknown, expired or revoked (checked on every call: a revocation takes
 * effect at once).
 */
export async function authenticateCredentialIn(db: Executor, secret: string, now: Date, accountId?: string): Promise<CredentialAuth | null> {
  return authenticateSecretHash(db, hashSecret(secret), now, accountId);
}

/** `authenticateCredentialIn` for a secret already hashed (`hashSecret`). */
export async function authenticateSecretHash(db: Executor, secretHash: string, now: Date, accountId?: string): Promise<CredentialAuth | null> {
  const [row] = await runStatement(db, credentialBySecret, [secretHash, accountId ?? null]);
  if (!row || row.revoked_at || (row.expires_at && row.expires_at <= now)) return null;
  touchCredentialIfDue(db, row.id, row.last_used_at?.getTime() ?? null, now);
  const principal: Principal = {
    via: row.kind === 'agent_token' ? 'agent_token' : 'api_key',
    id: row.id,
    userId: row.user_id,
    accountId: row.account_id,
    identityId: row.identity_id,
    scopes: row.scopes,
    readOnly: row.read_only,
    expiresAt: row.expires_at,
  };
  return accountId === undefined ? { principal } : { principal, membership: membershipFrom(accountId, row) };
}

/**
 * Stamps a credential's last use, off the request's path, when the stamp known (`lastUsedMs`,
 * null: never used) is older than a minute; answers whether it did.
 */
export function touchCredentialIfDue(db: Executor, credentialId: string, lastUsedMs: number | null, now: Date): boolean {
  if (lastUsedMs !== null && now.getTime() - lastUsedMs <= LAST_USED_GRANULARITY_MS) return false;
  runStatement(db, touchCredential, [credentialId, now]).then(undefined, () => undefined);
  return true;
}

/** Resolves a bearer secret to a principal; null when unknown, expired or revoked. */
export async function authenticateCredential(db: Executor, secret: string, now: Date): Promise<Principal | null> {
  return (await authenticateCredentialIn(db, secret, now))?.principal ?? null;
}

/** A listed credential: its row and its person's current role in the account (null: no seat there). */
export type ListedCredentialRow = CredentialRow & { role: Role | null };

/**
 * The view of a listed credential. `scopes` are those it carries now, under its person's current
 * role, exactly as on use (a member's key never shows webhooks:manage); without a seat in the
 * account it is refused on use (not_a_member), so it carries none.
 */
export function toCredentialView(row: ListedCredentialRow) {
  return {
    id: row.id,
    kind: row.kind,
    prefix: row.prefix,
    scopes: row.role ? scopesCarriedNow(row.role, row.scopes) : [],
    read_only: row.readOnly,
    user_id: row.userId,
    identity_id: row.identityId,
    created_at: row.createdAt.toISOString(),
    expires_at: row.expiresAt?.toISOString() ?? null,
    last_used_at: row.lastUsedAt?.toISOString() ?? null,
    revoked_at: row.revokedAt?.toISOString() ?? null,
  };
}

/** Newest first; keyset on seq. Each with its person's current role, which decides the scopes it carries. */
export async function listCredentials(db: Executor, accountId: string, page: { limit: number; after: number | null }): Promise<ListedCredentialRow[]> {
  const k = seqKeyset(credentials.seq, page.after, 'desc');
  const rows = await db
    .select({ ...getTableColumns(credentials), role: members.role })
    .from(credentials)
    .leftJoin(members, and(eq(members.accountId, credentials.accountId), eq(members.userId, credentials.userId)))
    .where(and(eq(credentials.accountId, accountId), k.after))
    .orderBy(k.order)
    .limit(page.limit + 1);
  return rows.map((r) => ({ ...r, role: r.role as Role | null }));
}

