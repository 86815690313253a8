import { accounts, eq, members, runStatement, statement, webSessions, type Db, type Executor } from '@teamchat/db';
import { MEMBERSHIP_COLUMNS, membershipFrom, type AccountMembership, type MembershipColumns } from '../accounts/directory';
import { recordAudit } from '../audit';
import { DUMMY_PASSWORD_HASH, hashSecret, safeEqual, verifyPassword } from '../crypto';
import { errors } from '../errors';
import { newId, randomToken } from '../ids';
import type { Principal } from '../principal';
import { findUserByEmail } from '../accounts/people';
import { newSecret } from './tokens';

export interface SignInResult {
  token: string;
  csrfToken: string;
  expiresAt: Date;
  body: {
    /** the session as a bearer credential for the web host (docs/api.md, 'Bearer web sessions'); the cookie carries the same */
    session_token: string;
    expires_at: string;
    csrf_token: string;
    user: { id: string; email: string };
    accounts: Array<{ id: string; name: string; role: string; plan: string; state: string }>;
  };
}

/**
 * Same answer, and about the same time, for an unknown email and a wrong password. The password is
 * checked before the transaction opens, so no connection is held through the hashing.
 */
export async function signIn(
  db: Db,
  input: { email: string; password: string; ttlHours: number; now: Date; requestId?: string },
): Promise<SignInResult> {
  const user = await findUserByEmail(db, input.email);
  const ok = await verifyPassword(input.password, user?.passwordHash ?? DUMMY_PASSWORD_HASH);
  if (!user || !ok) throw errors.unauthorized('The email or password is wrong.');
  return db.transaction((tx) => startSession(tx, { user, ttlHours: input.ttlHours, now: input.now, requestId: input.requestId }));
}

async function startSession(
  tx: Executor,
  input: { user: { id: string; email: string }; ttlHours: number; now: Date; requestId?: string },
): Promise<SignInResult> {
  const { user } = input;
  const token = newSecret('web_session');
  const csrfToken = randomToken(40);
  const expiresAt = new Date(input.now.getTime() + input.ttlHours * 3_600_000);
  const sessionId = newId('session');
  await tx.insert(webSessions).values({ id: sessionId, userId: user.id, tokenHash: hashSecret(token), csrfHash: hashSecret(csrfToken), expiresAt });
  const memberships = await tx
    .select({ id: accounts.id, name: accounts.name, role: members.role, plan: accounts.plan, state: accounts.state })
    .from(members)
    .innerJoin(accounts, eq(accounts.id, members.accountId))
    .where(eq(members.userId, user.id));
  for (const m of memberships) {
    await recordAudit(tx, {
      accountId: m.id, action: 'auth.signed_in', via: 'system', targetType: 'user', targetId: user.id,
      data: { user_id: user.id, session_id: sessionId }, requestId: input.requestId,
    });
  }
  return { token, csrfToken, expiresAt, body: { session_token: token, expires_at: expiresAt.toISOString(), csrf_token: csrfToken, user: { id: user.id, email: user.email }, accounts: memberships } };
}

export interface SessionAuth {
  principal: Principal;
  csrfHash: string;
  /** the seat in `accountId`, when one was asked for */
  membership?: AccountMembership;
}

interface SessionAuthRow extends MembershipColumns {
  id: string;
  user_id: string;
  csrf_hash: string;
}

/** A live session by its token's hash and, in the same round trip, the person's seat in the account of the path. */
const sessionByToken = statement<SessionAuthRow>('auth_session', `
  SELECT s.id, s.user_id, s.csrf_hash, ${MEMBERSHIP_COLUMNS}
    FROM web_sessions s
    LEFT JOIN accounts a ON a.id = $2::text
    LEFT JOIN members m ON m.account_id = a.id AND m.user_id = s.user_id
   WHERE s.token_hash = $1 AND s.ended_at IS NULL AND s.expires_at > $3`);

export async function authenticateSession(db: Executor, token: string, now: Date, accountId?: string): Promise<SessionAuth | null> {
  const [row] = await runStatement(db, sessionByToken, [hashSecret(token), accountId ?? null, now]);
  if (!row) return null;
  const auth: SessionAuth = { principal: { via: 'web_session', id: row.id, userId: row.user_id, readOnly: false }, csrfHash: row.csrf_hash };
  if (accountId !== undefined) auth.membership = membershipFrom(accountId, row);
  return auth;
}

export function csrfMatches(session: SessionAuth, presented: string | undefined): boolean {
  return typeof presented === 'string' && presented.length > 0 && safeEqual(hashSecret(presented), session.csrfHash);
}

/** Ends the session on the server: the cookie is refused from now on. */
export async function signOut(db: Executor, sessionId: string): Promise<void> {
  await db.update(webSessions).set({ endedAt: new Date() }).where(eq(webSessions.id, sessionId));
}
