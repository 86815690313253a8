import request from 'supertest';
import { sql, withUnboundedDatabase } from '@teamchat/db';
import { bearer, newAccount, newKey, signInWeb, startHarness, type Harness } from '../../../../test/support/harness';

/** `count` messages of `bytes` letters `a` in a new channel of the account's owner, written straight in SQL. */
async function seedCorpus(h: Harness, accountId: string, ownerEmail: string, ownerIdentityId: string, count: number, bytes: number) {
  const key = await newKey(h, accountId, ownerEmail, []);
  const ch = await request(h.api).post(`/accounts/${accountId}/channels`).set(bearer(key)).send({ name: `corpus-${count}` });
  expect(ch.status).toBe(201);
  // Set-up, not a request: writing 48 MB of text into the full-text and trigram indexes takes
  // longer than the request bound on a loaded machine.
  await withUnboundedDatabase(h.deps.config.databaseUrl, (db) => db.execute(sql`
    INSERT INTO messages (channel_id, ts_micros, account_id, author_identity_id, text)
    SELECT ${ch.body.id}, 1700000000000000 + g, ${accountId}, ${ownerIdentityId}, repeat('a', ${bytes})
    FROM generate_series(1, ${count}) AS g`));
  return ch.body.id as string;
}

/** The worst case for a substring match over text of `a`s: 199 × `a` then `b`. */
const WORST_QUERY = `${'a'.repeat(199)}b`;

describe('Expensive reads cannot stall other tenants (docs/api.md "Expensive reads")', () => {
  let h: Harness;
  // The production pool size: without a gate 12 searches take every connection.
  beforeAll(async () => { h = await startHarness({}, { poolSize: 10 }); });
  afterAll(async () => { await h.close(); });

  test('12 worst-case searches at once: another account\'s GET channels answers within 1 s, and every search answers results, 429 rate_limited (scope search) or 500 statement_timeout', async () => {
    const a = await newAccount(h);
    await seedCorpus(h, a.accountId, a.owner.email, a.owner.identityId, 3000, 16 * 1024);
    const other = await newAccount(h);
    const otherKey = await newKey(h, other.accountId, other.owner.email, []);
    const { agent } = await signInWeb(h, a.owner.email);

    const started = Date.now();
    const searches = Array.from({ length: 12 }, () =>
      agent.get(`/accounts/${a.accountId}/search`).query({ q: WORST_QUERY }).then((res) => ({ res, ms: Date.now() - started })));
    // Let the searches take their connections.
    await new Promise((r) => setTimeout(r, 1000));
    const t0 = Date.now();
    const list = await request(h.api).get(`/accounts/${other.accountId}/channels`).set(bearer(otherKey));
    const listMs = Date.now() - t0;
    expect(list.status).toBe(200);
    expect(listMs).toBeLessThan(1000);

    const answers = await Promise.all(searches);
    for (const { res, ms } of answers) {
      // Never a hang: at most two waits and one run of the 5 s bound, plus slack for a loaded machine.
      expect(ms).toBeLessThan(25_000);
      if (res.status === 200) continue;
      if (res.status === 429) {
        expect(res.body.error).toMatchObject({ code: 'rate_limited', scope: 'search' });
        expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
        continue;
      }
      expect(res.status).toBe(500);
      expect(res.body.error).toMatchObject({ code: 'internal', reason: 'statement_timeout', status_url: 'http://web.test/status' });
      expect(res.body.error.request_id).toEqual(expect.any(String));
      expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
    }
    // One account's searches queue behind each other: most of a burst of 12 is refused at once.
    expect(answers.filter(({ res }) => res.status === 429).length).toBeGreaterThanOrEqual(9);
  }, 60_000);
});

describe('The PostgreSQL time bound (DB_STATEMENT_TIMEOUT_MS)', () => {
  // Set-up (password hashing inside transactions) runs on a harness with the default bound; the
  // call under test on one whose pool has a 500 ms bound, over the same database.
  let h: Harness;
  let tight: Harness;
  beforeAll(async () => {
    h = await startHarness();
    tight = await startHarness({ dbStatementTimeoutMs: 500 });
  });
  afterAll(async () => {
    await tight.close();
    await h.close();
  });

  test('a request cut by statement_timeout answers 500 internal, reason statement_timeout, with Retry-After, request_id and status_url', async () => {
    // Made slow for certain, whatever any query's plan: another connection holds the channel's row
    // lock, so the rename waits on it until the 500 ms bound cuts the statement.
    const a = await newAccount(h);
    const key = await newKey(h, a.accountId, a.owner.email, []);
    const ch = await request(h.api).post(`/accounts/${a.accountId}/channels`).set(bearer(key)).send({ name: 'locked' });
    expect(ch.status).toBe(201);
    const holder = await h.deps.database.pool.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT id FROM channels WHERE id = $1 FOR UPDATE', [ch.body.id]);
      const res = await request(tight.api).patch(`/accounts/${a.accountId}/channels/${ch.body.id}`).set(bearer(key)).send({ topic: 'waits' });
      expect(res.status).toBe(500);
      expect(res.body.error).toMatchObject({ code: 'internal', reason: 'statement_timeout', retry_after: 1 });
      expect(res.body.error.status_url).toEqual(expect.any(String));
      expect(res.body.error.request_id).toEqual(expect.any(String));
      expect(res.headers['retry-after']).toBe('1');
    } finally {
      await holder.query('ROLLBACK');
      holder.release();
    }
  });

  test('the pool sets statement_timeout and idle_in_transaction_session_timeout on its connections', async () => {
    const rows = await tight.deps.database.pool.query(`SELECT current_setting('statement_timeout') AS st, current_setting('idle_in_transaction_session_timeout') AS idle`);
    expect(rows.rows[0]).toEqual({ st: '500ms', idle: '500ms' });
    const defaults = await h.deps.database.pool.query(`SELECT current_setting('statement_timeout') AS st`);
    expect(defaults.rows[0]).toEqual({ st: '5s' });
  });
});
