import { randomToken } from '../ids';
import { createAccount } from './accounts';
import { createApiKey } from '../auth/credentials';
import { GRANTABLE_SCOPES } from '../scopes';
import { getMemberByEmail } from './people';
import { recordAudit } from '../audit';
import { accounts, sql, type Db } from '@teamchat/db';

export interface DemoCredentials {
  accountId: string;
  email: string;
  password: string;
  apiKey: string;
}

export const DEMO_EMAIL = 'owner@demo.teamchat.test';

/** On an empty database (a first `npm start`, or after `demo:reset`), creates a demo account whose owner holds an all-scopes API key. */
export async function seedDemoIfEmpty(db: Db): Promise<DemoCredentials | null> {
  return db.transaction(async (tx) => {
    // Serialise concurrent starts: only one seeds.
    await tx.execute(sql`SELECT pg_advisory_xact_lock(724312)`);
    const [{ n }] = await tx.select({ n: sql<number>`count(*)::int` }).from(accounts);
    if (n > 0) return null;
    const password = randomToken(16);
    const account = await createAccount(tx, { plan: 'pro', ownerEmail: DEMO_EMAIL, ownerPassword: password, name: 'Demo' });
    const owner = (await getMemberByEmail(tx, account.account_id, DEMO_EMAIL))!;
    const key = await createApiKey(tx, {
      accountId: account.account_id, userId: owner.userId, identityId: owner.identityId, role: 'owner',
      scopes: [...GRANTABLE_SCOPES], readOnly: false,
    });
    await recordAudit(tx, { accountId: account.account_id, action: 'account.demo_seeded', via: 'system' });
    return { accountId: account.account_id, email: DEMO_EMAIL, password, apiKey: key.key };
  });
}
