import { accounts, and, eq, gt, isNull, members, webSessions, type Executor } from '@teamchat/db';
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
    /** the session as a bearer credential for the web host (issue 7 item 8); the cookie carries the same */
    session_token: string;
    expires_at: string;
    csrf_token: string;
    user: { id: string; email: string };
    accounts: Array<{ id: string; name: string; role: string; plan: string; state: string }>;
  };
}

/** Same answer, and about the same time, for an unknown email and a wrong password. */
export async function signIn(
  tx: Executor,
  input: { email: string; password: string; ttlHours: number; now: Date; requestId?: string },
): Promise<SignInResult> {
  const user = await findUserByEmail(tx, input.email);
  const ok = await verifyPassword(input.password, user?.passwordHash ?? DUMMY_PASSWORD_HASH);
  if (!user || !ok) throw errors.unauthorized('The email or password is wrong.');
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
}

export async function authenticateSession(db: Executor, token: string, now: Date): Promise<SessionAuth | null> {
  const [row] = await db
    .select()
    .from(webSessions)
    .where(and(eq(webSessions.tokenHash, hashSecret(token)), isNull(webSessions.endedAt), gt(webSessions.expiresAt, now)));
  if (!row) return null;
  return { principal: { via: 'web_session', id: row.id, userId: row.userId, readOnly: false }, csrfHash: row.csrfHash };
}

export function csrfMatches(session: SessionAuth, presented: string | undefined): boolean {
  return typeof presented === 'string' && presented.length > 0 && safeEqual(hashSecret(presented), session.csrfHash);
}

/** Ends the session on the server: the cookie is refused from now on. */
export async function signOut(db: Executor, sessionId: string): Promise<void> {
  await db.update(webSessions).set({ endedAt: new Date() }).where(eq(webSessions.id, sessionId));
}
