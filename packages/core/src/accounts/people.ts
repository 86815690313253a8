import { and, eq, identities, members, sql, users, type Executor } from '@teamchat/db';
import { errors } from '../errors';
import { hashPassword, verifyPassword } from '../crypto';
import { newId } from '../ids';
import type { Role } from '../scopes';
import type { Actor } from '../principal';
import { recordAudit } from '../audit';

/** Password length rule (characters), for the CLI and sign-in alike. */
export const PASSWORD_MIN = 8;
export const PASSWORD_MAX = 200;

export async function findUserByEmail(db: Executor, email: string) {
  const [row] = await db.select().from(users).where(eq(sql`lower(${users.email})`, email.toLowerCase()));
  return row;
}

/**
 * A person's sign-in, settled before any transaction opens: an existing person's password is
 * checked, a new person's is hashed. scrypt holds ~50 ms of CPU (seconds on a loaded machine);
 * inside a transaction it would keep a pooled connection idle until the database bound ends it
 * (docs/api.md, "Errors": no request holds the database longer than a bound).
 */
export type PreparedPerson = { email: string; userId: string } | { email: string; passwordHash: string };

/** A person who does not exist yet, with the password already hashed. */
export async function newPerson(email: string, password: string): Promise<PreparedPerson> {
  return { email, passwordHash: await hashPassword(password) };
}

/**
 * Finds the person with this email and checks the password, or hashes it for a new person. An
 * existing person's password must match, so the operator CLI cannot silently take over someone's
 * login.
 */
export async function preparePerson(db: Executor, email: string, password: string): Promise<PreparedPerson> {
  const existing = await findUserByEmail(db, email);
  if (!existing) return newPerson(email, password);
  if (!(await verifyPassword(password, existing.passwordHash))) {
    throw errors.invalid(`A person with email ${email} exists and the password does not match.`, { field: 'password' });
  }
  return { email, userId: existing.id };
}

/** The prepared person's row: the existing one, or a new one inserted with the prepared hash. */
export async function ensureUser(tx: Executor, person: PreparedPerson) {
  if ('userId' in person) {
    const [row] = await tx.select().from(users).where(eq(users.id, person.userId));
    if (!row) throw errors.invalid(`The person with email ${person.email} no longer exists.`, { field: 'email' });
    return row;
  }
  // Someone added this email between preparePerson and now: their password was never checked.
  if (await findUserByEmail(tx, person.email)) {
    throw errors.invalid(`A person with email ${person.email} was added meanwhile; try again.`, { field: 'email' });
  }
  const [row] = await tx.insert(users).values({ id: newId('user'), email: person.email, passwordHash: person.passwordHash }).returning();
  return row;
}

/** Gives a person a seat (and a person identity) in an account. */
export async function addMember(tx: Executor, input: { accountId: string; userId: string; email: string; role: Role }) {
  const [already] = await tx
    .select()
    .from(members)
    .where(and(eq(members.accountId, input.accountId), eq(members.userId, input.userId)));
  if (already) throw errors.taken(`${input.email} is already a member of this account.`, 'already_member', 'email');
  const [identity] = await tx
    .insert(identities)
    .values({ id: newId('identity'), accountId: input.accountId, kind: 'person', name: input.email, userId: input.userId })
    .returning();
  await tx.insert(members).values({ accountId: input.accountId, userId: input.userId, identityId: identity.id, role: input.role });
  return { user_id: input.userId, identity_id: identity.id, email: input.email, role: input.role };
}

export async function getMembership(db: Executor, accountId: string, userId: string) {
  const [row] = await db
    .select()
    .from(members)
    .where(and(eq(members.accountId, accountId), eq(members.userId, userId)));
  return row;
}

export async function getMemberByEmail(db: Executor, accountId: string, email: string) {
  const user = await findUserByEmail(db, email);
  if (!user) return undefined;
  const member = await getMembership(db, accountId, user.id);
  return member ? { ...member, email: user.email } : undefined;
}

/** Changes a person's role in an account; recorded in the audit log in the same transaction. */
export async function setMemberRole(
  tx: Executor,
  input: { accountId: string; userId: string; role: Role; actor?: Actor },
): Promise<{ user_id: string; identity_id: string; role: Role; previous_role: Role }> {
  const before = await getMembership(tx, input.accountId, input.userId);
  if (!before) throw errors.notFound('member');
  await tx.update(members).set({ role: input.role }).where(and(eq(members.accountId, input.accountId), eq(members.userId, input.userId)));
  await recordAudit(tx, {
    accountId: input.accountId, action: 'member.role_changed', actor: input.actor, via: 'cli',
    targetType: 'user', targetId: input.userId, data: { from: before.role, to: input.role },
  });
  return { user_id: input.userId, identity_id: before.identityId, role: input.role, previous_role: before.role as Role };
}
