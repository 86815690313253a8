import { accounts, eq, runStatement, statement, type Db, type Executor } from '@teamchat/db';
import { recordAudit } from '../audit';
import { AppError, errors } from '../errors';
import { newId } from '../ids';
import type { Plan } from '../plans';
import type { Actor } from '../principal';
import { addMember, ensureUser, preparePerson, type PreparedPerson } from './people';

export type AccountState = 'active' | 'read_only' | 'suspended';
export const ACCOUNT_STATES: readonly AccountState[] = ['active', 'read_only', 'suspended'];

export type AccountRow = typeof accounts.$inferSelect;

export async function getAccount(db: Executor, accountId: string): Promise<AccountRow | undefined> {
  const [row] = await db.select().from(accounts).where(eq(accounts.id, accountId));
  return row;
}

export async function requireAccount(db: Executor, accountId: string): Promise<AccountRow> {
  const row = await getAccount(db, accountId);
  if (!row) throw errors.notFound('account');
  return row;
}

/** Creates an account with its owner, prepared before the transaction (see PreparedPerson). */
export async function createAccount(tx: Executor, input: { plan: Plan; owner: PreparedPerson; name?: string }) {
  const id = newId('account');
  await tx.insert(accounts).values({ id, name: input.name ?? input.owner.email.split('@')[1] ?? id, plan: input.plan });
  const user = await ensureUser(tx, input.owner);
  const owner = await addMember(tx, { accountId: id, userId: user.id, email: user.email, role: 'owner' });
  await recordAudit(tx, { accountId: id, action: 'account.created', via: 'cli', targetType: 'account', targetId: id, data: { plan: input.plan } });
  await recordAudit(tx, { accountId: id, action: 'member.added', via: 'cli', targetType: 'user', targetId: user.id, data: { role: 'owner' } });
  return { account_id: id, owner: { user_id: owner.user_id, identity_id: owner.identity_id, email: owner.email } };
}

/** Opens an account for an owner by email and password (operator CLI, tests, benches): the password settled first, then one transaction. */
export async function openAccount(db: Db, input: { plan: Plan; ownerEmail: string; ownerPassword: string; name?: string }) {
  const owner = await preparePerson(db, input.ownerEmail, input.ownerPassword);
  return db.transaction((tx) => createAccount(tx, { plan: input.plan, owner, name: input.name }));
}

export async function setAccountState(tx: Executor, accountId: string, state: AccountState, actor?: Actor) {
  const before = await requireAccount(tx, accountId);
  await tx.update(accounts).set({ state }).where(eq(accounts.id, accountId));
  await recordAudit(tx, { accountId, action: 'account.state_changed', actor, via: 'cli', targetType: 'account', targetId: accountId, data: { from: before.state, to: state } });
}

export async function setAccountPlan(tx: Executor, accountId: string, plan: Plan, actor?: Actor) {
  const before = await requireAccount(tx, accountId);
  await tx.update(accounts).set({ plan }).where(eq(accounts.id, accountId));
  await recordAudit(tx, { accountId, action: 'account.plan_changed', actor, via: 'cli', targetType: 'account', targetId: accountId, data: { from: before.plan, to: plan } });
}

const seatCount = statement<{ n: number }>('account_seat_count', 'SELECT count(*)::int AS n FROM members WHERE account_id = $1');

/** Seats (people) of the account: one named statement, GET /accounts/{id} reads it on every call. */
export async function countSeats(db: Executor, accountId: string): Promise<number> {
  const [row] = await runStatement(db, seatCount, [accountId]);
  return row.n;
}

/** The error an inactive account answers on every route under it (spec: Account states). */
/**
 * For background work asked for while the account was active (an approved deletion, ...): when
 * it runs, a read-only or suspended account runs nothing (the same codes as its routes answer).
 */
export async function assertAccountActive(db: Executor, accountId: string): Promise<void> {
  const account = await requireAccount(db, accountId);
  const error = accountStateError(account.state);
  if (error) throw new AppError(error.code, `${error.message} The job ran nothing.`);
}

export function accountStateError(state: string): AppError | null {
  if (state === 'read_only') return new AppError('read_only', 'This account is read-only.');
  if (state === 'suspended') return new AppError('suspended', 'This account is suspended.');
  return null;
}
