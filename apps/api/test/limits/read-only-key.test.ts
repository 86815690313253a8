/**
 * Spec: Authentication rule 5 — channels:read and channels:write are always granted, except that
 * a read-only credential drops channels:write; rule 7 — a missing scope answers 403
 * insufficient_scope. Checked on POST /accounts/{id}/channels (channels:write); a read-only credential is
 * refused every write before its scope is looked at (docs/api.md "Read-only credentials").
 */
import request from 'supertest';
import { and, channels, eq, sql } from '@teamchat/db';
import { bearer, newAccount, newKey, startHarness, type Harness } from '../../../../test/support/harness';

let h: Harness;
beforeAll(async () => { h = await startHarness(); });
afterAll(async () => { await h.close(); });

async function channelCount(accountId: string): Promise<number> {
  const [row] = await h.deps.database.db.select({ n: sql<number>`count(*)::int` }).from(channels)
    .where(and(eq(channels.accountId, accountId), eq(channels.kind, 'channel')));
  return row.n;
}

test('a read-only key is refused a channels:write route with 403 insufficient_scope and writes nothing; it still reads', async () => {
  const acct = await newAccount(h, 'pro');
  const readOnly = await newKey(h, acct.accountId, acct.owner.email, [], { readOnly: true });
  const full = await newKey(h, acct.accountId, acct.owner.email, []);
  const path = `/accounts/${acct.accountId}/channels`;

  const before = await channelCount(acct.accountId);
  const refused = await request(h.api).post(path).set(bearer(readOnly)).send({ name: 'ro-attempt' });
  expect(refused.status).toBe(403);
  expect(refused.body.error).toMatchObject({ code: 'insufficient_scope', reason: 'read_only_credential' });
  expect(await channelCount(acct.accountId)).toBe(before);

  // the same request with an ordinary key of the same person succeeds: the route exists and the body is valid
  const created = await request(h.api).post(path).set(bearer(full)).send({ name: 'rw-created' });
  expect(created.status).toBe(201);
  expect(await channelCount(acct.accountId)).toBe(before + 1);

  // channels:read is kept
  const listed = await request(h.api).get(path).set(bearer(readOnly));
  expect(listed.status).toBe(200);
  expect(listed.body.data.map((c: { name: string }) => c.name)).toContain('rw-created');
});
