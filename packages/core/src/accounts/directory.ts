import { accounts, and, eq, identities, members, users, type Executor } from '@teamchat/db';
import { seqKeyset } from '../pagination';
import { errors } from '../errors';
import type { Actor, Principal } from '../principal';
import { roleAllows, sessionScopes, type Role } from '../scopes';
import type { AccountRow } from './accounts';

/**
 * Resolves who the caller is inside the account of the path. Unknown account → 404; a
 * credential of another account, or a person without a seat here → 403 not_a_member.
 * A credential never holds more than its person's current role allows.
 */
export async function resolveActor(
  db: Executor,
  principal: Principal,
  accountId: string,
  requestId?: string,
): Promise<{ account: AccountRow; actor: Actor }> {
  // One round trip: the account and the caller's seat in it (if any).
  const [row] = await db
    .select({ account: accounts, role: members.role, identityId: members.identityId })
    .from(accounts)
    .leftJoin(members, and(eq(members.accountId, accounts.id), eq(members.userId, principal.userId)))
    .where(eq(accounts.id, accountId));
  if (!row) throw errors.notFound('account');
  const { account, role: memberRole, identityId } = row;
  if (principal.accountId && principal.accountId !== accountId) throw errors.notAMember('account');
  if (!memberRole || !identityId) throw errors.notAMember('account');
  const role = memberRole as Role;
  const scopes = principal.scopes ? principal.scopes.filter((s) => roleAllows(role, s)) : sessionScopes(role);
  return {
    account,
    actor: {
      principal,
      accountId,
      userId: principal.userId,
      identityId: principal.identityId ?? identityId,
      role,
      scopes: new Set(scopes),
      requestId,
    },
  };
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
