import { randomBytes } from 'node:crypto';
import { webhookEndpoints } from '@teamchat/db';
import * as core from '@teamchat/core';

/**
 * The webhook bench's accounts: each a `scale` account with two seats (its owner, who posts, and
 * a member the posts mention), the owner's API key,
 * one channel and one enabled endpoint subscribed to `message.posted` and `mention` (pointers body) on the
 * bench receiver. The endpoint row is written directly with its secret sealed like the API's
 * (as test/support/webhooks.ts does): the endpoints API needs a web session to enable.
 *
 * Two seats mean the spec's in-flight cap of max(4, ceil(2/25)) = 4 per account, and the owner's
 * 65,000 call units a day: the bench spreads its load over many accounts rather than raising
 * any limit, so every attempt pays for the real cap lease and unit charge.
 */
export interface BenchAccount {
  accountId: string;
  /** a second member's person identity, mentioned by the bench's posts (a mention event each) */
  identityId: string;
  key: string;
  channel: string;
  endpointId: string;
}

export async function seedWebhookAccounts(deps: core.Deps, apiUrl: string, count: number, receiverUrl: string): Promise<BenchAccount[]> {
  const db = deps.database.db;
  const out: BenchAccount[] = [];
  for (let i = 0; i < count; i += 1) {
    const email = `whbench-${core.randomToken(6)}@example.test`;
    const acct = await core.openAccount(db, { plan: 'scale', ownerEmail: email, ownerPassword: 'bench password 1' });
    const member = (await core.getMemberByEmail(db, acct.account_id, email))!;
    const otherEmail = `whbench-${core.randomToken(6)}@example.test`;
    const otherPerson = await core.newPerson(otherEmail, 'bench password 1');
    const other = await db.transaction(async (tx) => {
      const user = await core.ensureUser(tx, otherPerson);
      return core.addMember(tx, { accountId: acct.account_id, userId: user.id, email: otherEmail, role: 'member' });
    });
    const { key } = await db.transaction((tx) => core.createApiKey(tx, {
      accountId: acct.account_id, userId: member.userId, identityId: member.identityId, role: member.role as 'owner', scopes: [], readOnly: false,
    }));
    const res = await fetch(`${apiUrl}/accounts/${acct.account_id}/channels`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: `wh-bench-${i}` }),
    });
    if (res.status !== 201) throw new Error(`create channel: ${res.status} ${await res.text()}`);
    const channel = ((await res.json()) as { id: string }).id;
    const endpointId = core.newId('webhook');
    await db.insert(webhookEndpoints).values({
      id: endpointId,
      accountId: acct.account_id,
      createdByUserId: member.userId,
      createdVia: 'web_session',
      url: `${receiverUrl}/hook-${randomBytes(3).toString('hex')}`,
      events: ['message.posted', 'mention'],
      allChannels: true,
      channelIds: [],
      payload: 'pointers',
      enabled: true,
      enabledAt: new Date(Date.now() - 1000),
      secretEnc: core.sealWebhookSecret(deps.config, core.generateSigningSecret()),
    });
    out.push({ accountId: acct.account_id, identityId: other.identity_id, key, channel, endpointId });
  }
  return out;
}
