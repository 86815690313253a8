import { and, eq, identities, members, runStatement, statement, users, type Executor } from '@teamchat/db';
import { seqKeyset } from '../pagination';
import { errors } from '../errors';
import type { Actor, Principal } from '../principal';
import { roleAllows, sessionScopes, type Role } from '../scopes';
import type { AccountRow } from './accounts';

/**
 * The caller's seat in one account, as read together with the credential or session in one
 * statement (auth/credentials.ts, auth/sessions.ts) or on its own (resolveActor).
 */
export interface AccountMembership {
  accountId: string;
  /** null: no such account */
  account: AccountRow | null;
  /** null: the person has no seat there */
  role: Role | null;
  identityId: string | null;
}

/** Columns of `accounts a LEFT JOIN members m` that `membershipFrom` reads, for named statements. */
export const MEMBERSHIP_COLUMNS =
  'a.id AS a_id, a.name AS a_name, a.plan AS a_plan, a.state AS a_state, a.created_at AS a_created_at, m.role AS m_role, m.identity_id AS m_identity_id';

export interface MembershipColumns {
  a_id: string | null;
  a_name: string | null;
  a_plan: string | null;
  a_state: string | null;
  a_created_at: Date | null;
  m_role: string | null;
  m_identity_id: string | null;
}

export function membershipFrom(accountId: string, r: MembershipColumns): AccountMembership {
  return {
    accountId,
    account: r.a_id === null ? null : { id: r.a_id, name: r.a_name!, plan: r.a_plan!, state: r.a_state!, createdAt: r.a_created_at! },
    role: r.m_role as Role | null,
    identityId: r.m_identity_id,
  };
}

/**
 * The scopes a credential carries now: those it was issued with that its person's current role
 * still allows (spec: Authentication rule 8; a demoted admin's key loses webhooks:manage at
 * once, and gets it back if promoted again). Used on every request and wherever one is listed.
 */
export function scopesCarriedNow(role: Role, issued: readonly string[]): string[] {
  return issued.filter((s) => roleAllows(role, s));
}

/**
 * Who the caller is inside the account of the path. Unknown account → 404; a credential of
 * another account, or a person without a seat here → 403 not_a_member. A credential never holds
 * more than its person's current role allows.
 */
export function actorFromMembership(principal: Principal, m: AccountMembership, requestId?: string): { account: AccountRow; actor: Actor } {
  const { accountId, account } = m;
  if (!account) throw errors.notFound('account');
  if (principal.accountId && principal.accountId !== accountId) throw errors.notAMember('account');
  if (!m.role || !m.identityId) throw errors.notAMember('account');
  const role = m.role;
  const scopes = principal.scopes ? scopesCarriedNow(role, principal.scopes) : sessionScopes(role);
  return {
    account,
    actor: {
      principal,
      accountId,
      userId: principal.userId,
      identityId: principal.identityId ?? m.identityId,
      role,
      scopes: new Set(scopes),
      requestId,
    },
  };
}

const membershipOf = statement<MembershipColumns>('account_membership', `
  SELECT ${MEMBERSHIP_COLUMNS}
    FROM accounts a
    LEFT JOIN members m ON m.account_id = a.id AND m.user_id = $2
   WHERE a.id = $1`);

/** resolveActor's reading on its own: the account and the caller's seat in it, one round trip. */
export async function resolveActor(
  db: Executor,
  principal: Principal,
  accountId: string,
  requestId?: string,
): Promise<{ account: AccountRow; actor: Actor }> {
  const [row] = await runStatement(db, membershipOf, [accountId, principal.userId]);
  const m: AccountMembership = row ? membershipFrom(accountId, row) : { accountId, account: null, role: null, identityId: null };
  return actorFromMembership(principal, m, requestId);
}

/** Account members, oldest first; keyset on seq. */
export async function listMembers(db: Executor, accountId: string, page: { limit: number; after: number | null }) {
  const k = seqKeyset(members.seq, page.after, 'asc');
  const rows = await db
    .select({ seq: members.seq, userId: members.userId, identityId: members.identityId, role: members.role, email: users.email, createdAt: members.createdAt })
    .from(members)
    .innerJoin(users, eq(users.id, members.userId))
    .where(and(eq(members.accountId, accountId), k.after))
    .orderBy(k.order)
    .limit(page.limit + 1);
  return rows;
}

export type MemberRow = Awaited<ReturnType<typeof listMembers>>[number];

export function toMemberView(row: MemberRow) {
  return { user_id: row.userId, identity_id: row.identityId, email: row.email, role: row.role, joined_at: row.createdAt.toISOString() };
}

type IdentityRow = typeof identities.$inferSelect;

export function toIdentityView(row: IdentityRow) {
  return {
    id: row.id,
    kind: row.kind,
    name: row.name,
    user_id: row.userId ?? null,
    approved_by_user_id: row.approvedByUserId ?? null,
    created_at: row.createdAt.toISOString(),
  };
}

/** People's and agents' identities, oldest first; keyset on seq. */
export function listIdentities(db: Executor, accountId: string, page: { limit: number; after: number | null }) {
  const k = seqKeyset(identities.seq, page.after, 'asc');
  return db.select().from(identities).where(and(eq(identities.accountId, accountId), k.after)).orderBy(k.order).limit(page.limit + 1);
}

export async function getIdentity(db: Executor, accountId: string, identityId: string) {
  const [row] = await db.select().from(identities).where(and(eq(identities.id, identityId), eq(identities.accountId, accountId)));
  return row;
}
