import { randomToken } from '../ids';
import { createAccount } from './accounts';
import { createApiKey } from '../auth/credentials';
import { GRANTABLE_SCOPES } from '../scopes';
import { getMemberByEmail, newPerson } from './people';
import { recordAudit } from '../audit';
import { accounts, sql, type Db, type Executor } from '@teamchat/db';

export interface DemoCredentials {
  accountId: string;
  email: string;
  password: string;
  apiKey: string;
}

export const DEMO_EMAIL = 'owner@demo.teamchat.test';

/** On an empty database (a first `npm start`, or after `demo:reset`), creates a demo account whose owner holds an all-scopes API key. */
export async function seedDemoIfEmpty(db: Db): Promise<DemoCredentials | null> {
  if (await hasAccounts(db)) return null;
  const password = randomToken(16);
  // Hashed before the transaction (see PreparedPerson); wasted only when another start seeds first.
  const owner = await newPerson(DEMO_EMAIL, password);
  return db.transaction(async (tx) => {
    // Serialise concurrent starts: only one seeds.
    await tx.execute(sql`SELECT pg_advisory_xact_lock(724312)`);
    if (await hasAccounts(tx)) return null;
    const account = await createAccount(tx, { plan: 'pro', owner, name: 'Demo' });
    const member = (await getMemberByEmail(tx, account.account_id, DEMO_EMAIL))!;
    const key = await createApiKey(tx, {
      accountId: account.account_id, userId: member.userId, identityId: member.identityId, role: 'owner',
      scopes: [...GRANTABLE_SCOPES], readOnly: false,
    });
    await recordAudit(tx, { accountId: account.account_id, action: 'account.demo_seeded', via: 'system' });
    return { accountId: account.account_id, email: DEMO_EMAIL, password, apiKey: key.key };
  });
}

async function hasAccounts(db: Executor): Promise<boolean> {
  const [{ n }] = await db.select({ n: sql<number>`count(*)::int` }).from(accounts).limit(1);
  return n > 0;
}
