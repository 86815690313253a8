/**
 * The post path (docs/performance.md, 'The post path'): POST .../messages is two named statements after authentication
 * (`post_message_facts`, then `post_message`, one CTE), with no BEGIN/COMMIT unless an
 * Idempotency-Key is sent (round trips: platform/round-trips.test.ts). These tests pin that it writes exactly the rows the former
 * transaction of builder queries wrote (spec: Events / Subscribable events; docs/api.md
 * "Events (the outbox)"), that ts stays strictly increasing in commit order (docs/api.md
 * "Message `ts`"), and that the one statement is atomic.
 */
import { randomUUID } from 'node:crypto';
import {
  and, asc, channelMembers, channels, eq, events, files, identities, inArray, messageFiles, messages, ne, sql, type Executor,
} from '@teamchat/db';
import {
  AuthenticationNotConfirmed, MAX_POSTS_PER_BATCH, errors, forgetPostFacts, formatTs, messagePostedEvents, parseMentions, postMessage, recordEvents, resolveActor,
  toMessageView, type Actor, type MessageRow, type PostMessageInput, type Principal,
} from '@teamchat/core';
import { createMigratedDatabase, dropDatabase } from '../../../../test/support/databases';
import { startHarness, type Harness } from '../../../../test/support/harness';
import { addToChannel, makeChannel, memberCaller, messagingAccount, post, type MessagingAccount } from '../../../../test/support/messaging';

let h: Harness;
// A database of its own: the run's shared database has a worker in it (test/start.test.ts starts
// the whole service), whose relay would mark these events relayed while they are compared.
let own: { name: string; url: string };
beforeAll(async () => {
  own = await createMigratedDatabase('teamchat_postpath');
  h = await startHarness({ limitsEnabled: false, databaseUrl: own.url });
});
afterAll(async () => {
  await h.close();
  await dropDatabase(own.name);
});

/**
 * The post as it was written before the two-statement post path (main at c1f947e), kept verbatim as
 * the reference: a transaction of builder queries (mention lookup, ts UPDATE, root UPDATE,
 * INSERT message, DM members, INSERT events).
 */
async function referencePostMessage(tx: Executor, input: PostMessageInput): Promise<MessageRow> {
  const { actor } = input;
  const parsed = parseMentions(input.text);
  const mentioned = parsed.identityIds.length
    ? (await tx.select({ id: identities.id }).from(identities)
        .where(and(eq(identities.accountId, actor.accountId), inArray(identities.id, parsed.identityIds)))).map((r) => r.id)
    : [];
  const mentions = parsed.identityIds.filter((id) => mentioned.includes(id));
  const allocated = await tx.execute<{ last_ts_micros: string; kind: string }>(sql`
    UPDATE channels
       SET last_ts_micros = GREATEST(last_ts_micros + 1, (extract(epoch FROM clock_timestamp()) * 1000000)::bigint)
     WHERE id = ${input.channelId} AND account_id = ${actor.accountId}
       AND EXISTS (SELECT 1 FROM channel_members m WHERE m.channel_id = ${input.channelId} AND m.identity_id = ${actor.identityId})
 RETURNING last_ts_micros::text AS last_ts_micros, kind`);
  if (!allocated.rows[0]) throw errors.notAMember('channel');
  const tsMicros = BigInt(allocated.rows[0].last_ts_micros);
  const kind = allocated.rows[0].kind;
  let parent: { tsMicros: bigint; author: string } | null = null;
  if (input.threadTsMicros !== undefined) {
    const t = input.threadTsMicros;
    const result = await tx.execute<{ ts_micros: string; author_identity_id: string }>(sql`
      UPDATE messages SET reply_count = reply_count + 1
       WHERE channel_id = ${input.channelId}
         AND ts_micros = COALESCE((SELECT thread_ts_micros FROM messages WHERE channel_id = ${input.channelId} AND ts_micros = ${t.toString()}::bigint), ${t.toString()}::bigint)
         AND thread_ts_micros IS NULL
   RETURNING ts_micros::text AS ts_micros, author_identity_id`);
    const row = result.rows[0];
    if (!row) throw errors.invalid('thread_ts does not name a message in this channel.', { field: 'thread_ts' });
    parent = { tsMicros: BigInt(row.ts_micros), author: row.author_identity_id };
  }
  const [message] = await tx.insert(messages).values({
    channelId: input.channelId, tsMicros, accountId: actor.accountId, authorIdentityId: actor.identityId, text: input.text,
    attachments: input.attachments ?? [], links: input.links ?? [], threadTsMicros: parent?.tsMicros ?? null, mentions,
    broadcast: parsed.broadcast !== null, clientRef: input.clientRef, session: input.session ?? null,
  }).returning();
  const dmOthers = kind === 'dm'
    ? (await tx.select({ id: channelMembers.identityId }).from(channelMembers)
        .where(and(eq(channelMembers.channelId, input.channelId), ne(channelMembers.identityId, actor.identityId)))).map((r) => r.id)
    : [];
  await recordEvents(tx, messagePostedEvents({ message, kind, parentAuthor: parent?.author ?? null, broadcast: parsed.broadcast, dmRecipients: dmOthers }));
  return message;
}

async function actorOf(a: MessagingAccount, identity?: { userId: string; identityId: string }): Promise<Actor> {
  const who = identity ?? a.owner;
  const principal: Principal = { via: 'api_key', id: 'key_test', userId: who.userId, accountId: a.accountId, identityId: who.identityId, readOnly: false };
  return (await resolveActor(h.deps.database.db, principal, a.accountId)).actor;
}

const db = () => h.deps.database.db;

/**
 * Posts `text` in a transaction that then waits before its commit, holding the channel until
 * `release` is called; answers once the post is in. `done` settles with the post once committed.
 */
async function holdChannel(actor: Actor, channelId: string, text: string): Promise<{ release: () => void; done: Promise<MessageRow> }> {
  let release!: () => void;
  const held = new Promise<void>((r) => { release = r; });
  let posted!: () => void;
  const inTx = new Promise<void>((r) => { posted = r; });
  const done = db().transaction(async (tx) => {
    const m = await postMessage(tx, { actor, channelId, text });
    posted();
    await held;
    return m;
  });
  await Promise.race([inTx, done]);
  return { release, done };
}

/** Runs `work` while `hold` holds its channel, releasing it whatever happens (posts queued behind it would hang the file). */
async function whileHeld<T>(hold: { release: () => void }, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } finally {
    hold.release();
  }
}

async function messageRow(channelId: string, tsMicros: bigint): Promise<MessageRow> {
  const [row] = await db().select().from(messages).where(and(eq(messages.channelId, channelId), eq(messages.tsMicros, tsMicros)));
  return row;
}

/** The event rows of one post (by channel and ts), oldest first. */
async function eventsOfPost(channelId: string, tsMicros: bigint) {
  const rows = await db().select().from(events)
    .where(and(eq(events.channelId, channelId), sql`${events.data}->>'ts' = ${formatTs(tsMicros)}`))
    .orderBy(asc(events.seq));
  return rows;
}

/** What must be equal between two posts of the same input: everything but the ts, ids and times. */
async function comparable(channelId: string, tsMicros: bigint) {
  const { tsMicros: _ts, createdAt, ...message } = await messageRow(channelId, tsMicros);
  expect(createdAt).toBeInstanceOf(Date);
  const rows = await eventsOfPost(channelId, tsMicros);
  return {
    message,
    events: rows.map((r) => {
      expect(r.id).toMatch(/^evt_/);
      expect(r.relayedAt).toBeNull();
      const { ts, ...data } = r.data as { ts: string };
      expect(ts).toBe(formatTs(tsMicros));
      return { type: r.type, accountId: r.accountId, channelId: r.channelId, data };
    }),
  };
}

/**
 * Posts `input` through the reference, then through the new path (use case, no transaction)
 * twice: with this process knowing none of the post's facts (so it reads them), then knowing
 * them (so a top-level post skips the read). Both must write what the reference wrote.
 */
async function both(input: PostMessageInput) {
  const before = await db().transaction((tx) => referencePostMessage(tx, input));
  forgetPostFacts();
  const after = await postMessage(db(), input);
  const warm = await postMessage(db(), input);
  const ref = await comparable(input.channelId, before.tsMicros);
  const now = await comparable(input.channelId, after.tsMicros);
  expect(await comparable(input.channelId, warm.tsMicros)).toEqual(now);
  expect(after.tsMicros > before.tsMicros).toBe(true);
  // The answer the route builds from the returned row is the row as stored.
  expect(toMessageView(after)).toEqual(toMessageView(await messageRow(input.channelId, after.tsMicros)));
  expect(toMessageView(warm)).toEqual(toMessageView(await messageRow(input.channelId, warm.tsMicros)));
  return { ref, now, before, after };
}

describe('the two-statement post path writes the same message and event rows as before', () => {
  test('plain post (text, links, attachments, client_ref, MCP session)', async () => {
    const a = await messagingAccount(h);
    const ch = await makeChannel(a.ownerApi);
    const { ref, now } = await both({
      actor: await actorOf(a), channelId: ch, text: 'plain words', clientRef: 'cr-7', session: { client: 'claude-code', version: '1.2.3' },
      links: ['https://a.example', 'https://b.example'], attachments: [{ url: 'https://f.example/x.png', title: 'x', size: 3 }],
    });
    expect(now).toEqual(ref);
    expect(now.events.map((e) => e.type)).toEqual(['message.posted']);
  });

  test('mentions (known, unknown, the author, repeated: order of first appearance)', async () => {
    const a = await messagingAccount(h);
    const bob = await memberCaller(h, a.accountId);
    const carol = await memberCaller(h, a.accountId);
    const other = await messagingAccount(h); // an identity of another account is not a mention here
    const ch = await makeChannel(a.ownerApi);
    const text = `<@${carol.identityId}> hi <@${bob.identityId}>, me <@${a.owner.identityId}>, ghost <@idn_ghost>, <@${other.owner.identityId}>, <@${carol.identityId}>`;
    const { ref, now } = await both({ actor: await actorOf(a), channelId: ch, text });
    expect(now).toEqual(ref);
    expect(now.message.mentions).toEqual([carol.identityId, bob.identityId, a.owner.identityId]);
    expect(now.events.map((e) => [e.type, (e.data as { to?: string }).to])).toEqual([
      ['message.posted', undefined], ['mention', carol.identityId], ['mention', bob.identityId],
    ]);
  });

  test('broadcast (<!here> and <!channel>: channel wins) with a mention', async () => {
    const a = await messagingAccount(h);
    const bob = await memberCaller(h, a.accountId);
    const ch = await makeChannel(a.ownerApi);
    const { ref, now } = await both({ actor: await actorOf(a), channelId: ch, text: `<!here> <@${bob.identityId}> and <!channel>` });
    expect(now).toEqual(ref);
    expect(now.events.map((e) => e.type)).toEqual(['message.posted', 'mention', 'mention']);
    expect(now.events[2].data).toMatchObject({ broadcast: true, broadcast_kind: 'channel', from: a.owner.identityId });
  });

  test('thread reply, and a reply to a reply (joins the root): reply_count counts both paths', async () => {
    const a = await messagingAccount(h);
    const bob = await memberCaller(h, a.accountId);
    const ch = await makeChannel(a.ownerApi);
    await addToChannel(a.ownerApi, ch, bob.identityId);
    const root = await post(a.ownerApi, ch, { text: 'root' });
    const rootMicros = BigInt(root.ts.replace('.', ''));
    const bobActor = await actorOf(a, { userId: (await db().select().from(identities).where(eq(identities.id, bob.identityId)))[0].userId!, identityId: bob.identityId });
    const first = await both({ actor: bobActor, channelId: ch, text: `reply <@${a.owner.identityId}>`, threadTsMicros: rootMicros });
    expect(first.now).toEqual(first.ref);
    expect(first.now.message.threadTsMicros).toBe(rootMicros);
    expect(first.now.events.map((e) => e.type)).toEqual(['message.posted', 'thread.replied', 'mention']);
    expect(first.now.events[1].data).toMatchObject({ thread_ts: root.ts, parent_author: a.owner.identityId });
    // thread_ts naming a reply: both paths put the reply in the root's thread.
    const second = await both({ actor: bobActor, channelId: ch, text: 'reply to a reply', threadTsMicros: first.after.tsMicros });
    expect(second.now).toEqual(second.ref);
    expect(second.now.message.threadTsMicros).toBe(rootMicros);
    expect((await messageRow(ch, rootMicros)).replyCount).toBe(6); // 2 reference replies, 4 new ones
  });

  test('DM post: one dm.received per other member', async () => {
    const a = await messagingAccount(h);
    const bob = await memberCaller(h, a.accountId);
    const carol = await memberCaller(h, a.accountId);
    const dm = (await a.ownerApi.post('/dms', { members: [carol.identityId, bob.identityId] }).expect(201)).body.id as string;
    const { ref, now } = await both({ actor: await actorOf(a), channelId: dm, text: `psst <@${bob.identityId}>` });
    // dm.received follow the members' order (the reference read them unordered): compare them as a set.
    const sortDm = (x: typeof now) => ({ ...x, events: [...x.events].sort((p, q) => JSON.stringify(p).localeCompare(JSON.stringify(q))) });
    expect(sortDm(now)).toEqual(sortDm(ref));
    expect(now.events.map((e) => e.type)).toEqual(['message.posted', 'mention', 'dm.received', 'dm.received']);
    expect(now.events[0].data).toMatchObject({ channel: { id: dm, kind: 'dm' } });
  });

  test('through HTTP with an Idempotency-Key: the same rows, the answer as stored, a replay and a 409', async () => {
    const a = await messagingAccount(h);
    const bob = await memberCaller(h, a.accountId);
    const ch = await makeChannel(a.ownerApi);
    const body = { text: `keyed <@${bob.identityId}> <!here>`, client_ref: 'k-1', links: ['https://l.example'] };
    const refRow = await db().transaction(async (tx) => referencePostMessage(tx, {
      actor: await actorOf(a), channelId: ch, text: body.text, clientRef: body.client_ref, links: body.links,
    }));
    const key = randomUUID();
    const res = await a.ownerApi.post(`/channels/${ch}/messages`, body).set('Idempotency-Key', key);
    expect(res.status).toBe(201);
    expect(res.headers.etag).toBe('"1"');
    const tsMicros = BigInt(res.body.ts.replace('.', ''));
    expect(await comparable(ch, tsMicros)).toEqual(await comparable(ch, refRow.tsMicros));
    expect(res.body).toEqual(JSON.parse(JSON.stringify(toMessageView(await messageRow(ch, tsMicros)))));
    const replay = await a.ownerApi.post(`/channels/${ch}/messages`, body).set('Idempotency-Key', key);
    expect(replay.status).toBe(201);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.body).toEqual(res.body);
    expect((await a.ownerApi.post(`/channels/${ch}/messages`, { text: 'other' }).set('Idempotency-Key', key)).body.error.code).toBe('idempotency_conflict');
    const all = await db().select().from(messages).where(eq(messages.channelId, ch));
    expect(all).toHaveLength(2); // the reference's and the keyed one; the replay and the 409 created nothing
  });

  test('through HTTP without a key: the answer is the stored row (session from the MCP header is covered in mcp-session.test.ts)', async () => {
    const a = await messagingAccount(h);
    const ch = await makeChannel(a.ownerApi);
    const res = await a.ownerApi.post(`/channels/${ch}/messages`, {
      text: 'x', attachments: [{ title: 'spec', url: 'https://example.com/spec.pdf', mime_type: 'application/pdf', size: 10 }],
    });
    expect(res.status).toBe(201);
    expect(res.body).toEqual(JSON.parse(JSON.stringify(toMessageView(await messageRow(ch, BigInt(res.body.ts.replace('.', '')))))));
  });
});

/** Reads the channel's committed ts over and over on its own connection while `work` runs. */
async function watchCommits(channelId: string, work: () => Promise<unknown>) {
  const client = await h.deps.database.pool.connect();
  const snapshots: bigint[][] = [];
  let done = false;
  const poll = (async () => {
    while (!done) {
      const r = await client.query<{ ts: string }>('SELECT ts_micros::text AS ts FROM messages WHERE channel_id = $1', [channelId]);
      snapshots.push(r.rows.map((x) => BigInt(x.ts)));
    }
  })();
  try {
    await work();
  } finally {
    done = true;
    await poll;
    client.release();
  }
  return snapshots;
}

/** Commit order is ts order: whatever becomes visible later has a larger ts than all that was visible before. */
function expectCommitOrderIsTsOrder(snapshots: bigint[][]) {
  let seen = new Set<bigint>();
  let max = BigInt(-1);
  let grew = 0;
  for (const snap of snapshots) {
    const fresh = snap.filter((t) => !seen.has(t));
    for (const t of fresh) expect(t > max).toBe(true);
    for (const t of seen) expect(snap).toContain(t); // nothing committed disappears
    if (fresh.length) grew += 1;
    seen = new Set(snap);
    for (const t of snap) if (t > max) max = t;
  }
  return grew;
}

describe('ts strictly increasing in commit order (docs/api.md "Message `ts`"; the paging guarantee)', () => {
  test('60 concurrent posts on one channel from three callers: every newly committed ts is above all committed before', async () => {
    const a = await messagingAccount(h);
    const bob = await memberCaller(h, a.accountId);
    const carol = await memberCaller(h, a.accountId);
    const ch = await makeChannel(a.ownerApi);
    await addToChannel(a.ownerApi, ch, bob.identityId);
    await addToChannel(a.ownerApi, ch, carol.identityId);
    let answered: string[] = [];
    const snapshots = await watchCommits(ch, async () => {
      const res = await Promise.all(Array.from({ length: 60 }, (_, i) => [a.ownerApi, bob, carol][i % 3].post(`/channels/${ch}/messages`, { text: `n${i} <@${bob.identityId}>` })));
      for (const r of res) expect(r.status).toBe(201);
      answered = res.map((r) => r.body.ts as string);
    });
    const final = (await db().select().from(messages).where(eq(messages.channelId, ch))).map((m) => formatTs(m.tsMicros));
    expect(new Set(answered).size).toBe(60);
    expect([...final].sort()).toEqual([...answered].sort());
    expect(expectCommitOrderIsTsOrder([...snapshots, final.map((t) => BigInt(t.replace('.', '')))])).toBeGreaterThan(1);
    // each post wrote its own events with its own ts
    const posted = await db().select().from(events).where(and(eq(events.channelId, ch), eq(events.type, 'message.posted')));
    expect(posted.map((e) => (e.data as { ts: string }).ts).sort()).toEqual([...answered].sort());
  });

  test('a post whose transaction commits late holds the channel lock until then: posts behind it commit after it, with larger ts', async () => {
    const a = await messagingAccount(h);
    const ch = await makeChannel(a.ownerApi);
    const actor = await actorOf(a);
    let first: MessageRow | undefined;
    let later: MessageRow[] = [];
    const snapshots = await watchCommits(ch, async () => {
      // A keyed post runs in a transaction; this one waits before its commit.
      const slow = await holdChannel(actor, ch, 'slow');
      const fast = Promise.all(Array.from({ length: 5 }, (_, i) => postMessage(db(), { actor, channelId: ch, text: `fast ${i}` })));
      // Nothing behind the lock has committed (or even taken a ts) yet.
      const n = await whileHeld(slow, async () => {
        await new Promise((r) => setTimeout(r, 300));
        return (await db().execute<{ n: number }>(sql`SELECT count(*)::int AS n FROM messages WHERE channel_id = ${ch}`)).rows[0].n;
      });
      expect(n).toBe(0);
      first = await slow.done;
      later = await fast;
    });
    for (const m of later) expect(m.tsMicros > first!.tsMicros).toBe(true);
    expect(new Set(later.map((m) => m.tsMicros)).size).toBe(5);
    expectCommitOrderIsTsOrder(snapshots);
  });

  test("posts waiting for a channel queue on its lock in arrival order (docs/performance.md 'One channel is serial')", async () => {
    const a = await messagingAccount(h);
    const ch = await makeChannel(a.ownerApi);
    const actor = await actorOf(a);
    // Lock waits of this file's database only: other test files run beside it on the same server.
    const waitsOf = async (types: string[]) => (await db().execute<{ n: number }>(sql`
      SELECT count(*)::int AS n FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
       WHERE a.datname = current_database() AND l.locktype = ANY(string_to_array(${types.join(',')}, ',')) AND NOT l.granted`)).rows[0].n;
    const waiting = () => waitsOf(['advisory']);
    const until = async (n: number) => {
      for (let i = 0; i < 200 && (await waiting()) < n; i += 1) await new Promise((r) => setTimeout(r, 10));
      expect(await waiting()).toBe(n);
    };
    const slow = await holdChannel(actor, ch, 'holds the channel');
    // Each post is sent once the one before it waits: they wait on the channel's queue lock, not
    // on its row (where waiters race for the row when its holder commits).
    const queued: Promise<MessageRow>[] = [];
    const rowWaits = await whileHeld(slow, async () => {
      for (let i = 0; i < 5; i += 1) {
        queued.push(postMessage(db(), { actor, channelId: ch, text: `queued ${i}` }));
        await until(i + 1);
      }
      return waitsOf(['tuple', 'transactionid']);
    });
    expect(rowWaits).toBe(0);
    await slow.done;
    const done = await Promise.all(queued);
    for (let i = 1; i < done.length; i += 1) expect(done[i].tsMicros > done[i - 1].tsMicros).toBe(true);
  });
});

test("a caller who may not post in a channel is refused at once, without joining its queue", async () => {
  const a = await messagingAccount(h);
  const bob = await memberCaller(h, a.accountId); // in the account, not in the channel
  const ch = await makeChannel(a.ownerApi);
  // Refused once: this process now knows the channel's facts, so the next post skips their
  // read and only the post statement itself checks membership.
  expect((await bob.post(`/channels/${ch}/messages`, { text: 'first try' })).status).toBe(403);
  const slow = await holdChannel(await actorOf(a), ch, 'holds the channel');
  const refused = await whileHeld(slow, () => bob.post(`/channels/${ch}/messages`, { text: 'not a member' }));
  expect(refused.status).toBe(403);
  expect(refused.body.error.code).toBe('not_a_member');
  await slow.done;
  const rows = await db().select().from(messages).where(eq(messages.channelId, ch));
  expect(rows.map((m) => m.text)).toEqual(['holds the channel']);
});

/**
 * Runs `work` while a trigger refuses the `mention` event row of any post whose text carries the
 * marker it is given (and nothing else): the post's one statement fails in PostgreSQL.
 */
async function whileMentionsRefused<T>(work: (marker: string) => Promise<T>): Promise<T> {
  const marker = `refuse-${randomUUID()}`;
  const fn = `test_refuse_${randomUUID().replace(/-/g, '')}`;
  await h.deps.database.pool.query(`
    CREATE FUNCTION ${fn}() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF NEW.type = 'mention' AND NEW.data->'content'->>'text' LIKE '%${marker}%' THEN RAISE EXCEPTION 'refused by test'; END IF;
      RETURN NEW;
    END $$;
    CREATE TRIGGER ${fn} BEFORE INSERT ON events FOR EACH ROW EXECUTE FUNCTION ${fn}();`);
  try {
    return await work(marker);
  } finally {
    await h.deps.database.pool.query(`DROP TRIGGER ${fn} ON events; DROP FUNCTION ${fn}();`);
  }
}

describe('the post statement is atomic (outbox rows commit with the message or not at all)', () => {
  test('an event row that fails to insert takes the message and the ts with it (no BEGIN, still nothing written)', async () => {
    const a = await messagingAccount(h);
    const ch = await makeChannel(a.ownerApi);
    await post(a.ownerApi, ch, { text: 'before' });
    const [{ lastTsMicros }] = await db().select({ lastTsMicros: channels.lastTsMicros }).from(channels).where(eq(channels.id, ch));
    await whileMentionsRefused(async (marker) => {
      const res = await a.ownerApi.post(`/channels/${ch}/messages`, { text: `${marker} <!channel>` });
      expect(res.status).toBe(500);
      expect(res.body.error.code).toBe('internal');
    });
    expect((await db().select().from(messages).where(eq(messages.channelId, ch))).map((m) => m.text)).toEqual(['before']);
    expect((await db().select().from(events).where(eq(events.channelId, ch)).orderBy(asc(events.seq))).map((e) => e.type)).toEqual(['channel.created', 'message.posted']);
    const [after] = await db().select({ lastTsMicros: channels.lastTsMicros }).from(channels).where(eq(channels.id, ch));
    expect(after.lastTsMicros).toBe(lastTsMicros);
    expect((await a.ownerApi.post(`/channels/${ch}/messages`, { text: 'and posting goes on' })).status).toBe(201);
  });

  test('a thread root deleted between the facts and the post: 400 thread_ts, no message, no event', async () => {
    const a = await messagingAccount(h);
    const ch = await makeChannel(a.ownerApi);
    const root = await post(a.ownerApi, ch, { text: 'root' });
    const rootMicros = BigInt(root.ts.replace('.', ''));
    const client = await h.deps.database.pool.connect();
    try {
      // An uncommitted delete of the root: the facts (no lock) still see it; the post's UPDATE of the root waits for it.
      await client.query('BEGIN');
      await client.query('DELETE FROM messages WHERE channel_id = $1 AND ts_micros = $2', [ch, rootMicros.toString()]);
      const reply = a.ownerApi.post(`/channels/${ch}/messages`, { text: 'too late', thread_ts: root.ts }).then((r) => r);
      await new Promise((r) => setTimeout(r, 300));
      await client.query('COMMIT');
      const res = await reply;
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ code: 'invalid_request', field: 'thread_ts' });
    } finally {
      client.release();
    }
    expect(await db().select().from(messages).where(eq(messages.channelId, ch))).toEqual([]);
    expect((await db().select().from(events).where(eq(events.channelId, ch)).orderBy(asc(events.seq))).map((e) => e.type)).toEqual(['channel.created', 'message.posted']);
  });
});

/**
 * Posts of one event-loop turn in one statement (post-batch.ts; docs/performance.md "Posts of one
 * turn in one statement"). Posts started together with known facts reach their write in the same
 * turn: their rows are written by one transaction (the same `xmin`; `created_at`, the
 * transaction's start in milliseconds here, could not tell two transactions of one millisecond apart).
 */
describe('top-level posts of one turn are written in one statement, each with its own checks and outcome', () => {
  /** The transaction that wrote a message row. */
  const txOf = async (channelId: string, ts: bigint) => (await db().execute<{ tx: string }>(
    sql`SELECT xmin::text AS tx FROM messages WHERE channel_id = ${channelId} AND ts_micros = ${ts.toString()}::bigint`)).rows[0].tx;

  test('a batch writes each post as a lone post writes it: message, events, ts (arrival order within a channel)', async () => {
    const a = await messagingAccount(h);
    const bob = await memberCaller(h, a.accountId);
    const dm = (await a.ownerApi.post('/dms', { members: [bob.identityId] }).expect(201)).body.id as string;
    const [c1, c2] = [await makeChannel(a.ownerApi), await makeChannel(a.ownerApi)];
    const actor = await actorOf(a);
    const inputs: PostMessageInput[] = [
      { actor, channelId: c1, text: 'plain', clientRef: 'cr-1', session: { client: 'claude-code', version: '1.2.3' }, links: ['https://a.example'], attachments: [{ url: 'https://f.example/x.png', title: 'x', size: 3 }] },
      { actor, channelId: c2, text: `hi <@${bob.identityId}> <!here>` },
      { actor, channelId: c1, text: 'second in c1' },
      { actor, channelId: dm, text: `psst <@${bob.identityId}>` },
      { actor, channelId: c1, text: 'third in c1 <!channel>' },
    ];
    // Each input posted alone first, one after the other: the reference, and its facts are then
    // known, so all five batched posts reach the write in one turn.
    const alone: MessageRow[] = [];
    for (const input of inputs) alone.push(await postMessage(db(), input));
    const batched = await Promise.all(inputs.map((input) => postMessage(db(), input)));
    const stamps = await Promise.all(batched.map((m) => txOf(m.channelId, m.tsMicros)));
    expect(new Set(stamps).size).toBe(1);
    for (const [i, m] of batched.entries()) {
      expect(await comparable(m.channelId, m.tsMicros)).toEqual(await comparable(alone[i].channelId, alone[i].tsMicros));
      expect(toMessageView(m)).toEqual(toMessageView(await messageRow(m.channelId, m.tsMicros)));
    }
    // ts: above every earlier post of the channel, in arrival order within the batch.
    const c1Rows = await db().select().from(messages).where(eq(messages.channelId, c1)).orderBy(asc(messages.tsMicros));
    expect(c1Rows.slice(-3).map((m) => m.text)).toEqual(['plain', 'second in c1', 'third in c1 <!channel>']);
    expect(c1Rows.slice(-3).map((m) => m.tsMicros)).toEqual([batched[0].tsMicros, batched[2].tsMicros, batched[4].tsMicros]);
    // The batch's event rows are recorded (seq, the relay's order) in arrival order, so by ts within a channel.
    const c1Posted = await db().select().from(events)
      .where(and(eq(events.channelId, c1), eq(events.type, 'message.posted'))).orderBy(asc(events.seq));
    expect(c1Posted.slice(-3).map((e) => (e.data as { ts: string }).ts)).toEqual([0, 2, 4].map((i) => formatTs(batched[i].tsMicros)));
  });

  test('files attached in a batch are recorded against their own message only (who may see a file follows it)', async () => {
    const a = await messagingAccount(h);
    const [c1, c2] = [await makeChannel(a.ownerApi), await makeChannel(a.ownerApi)];
    const actor = await actorOf(a);
    const fileIds = [randomUUID(), randomUUID(), randomUUID()].map((u) => `file_${u.replace(/-/g, '').slice(0, 20)}`);
    await db().insert(files).values(fileIds.map((id, i) => ({
      id, accountId: a.accountId, uploadedByIdentityId: a.owner.identityId, name: `f${i}.txt`, size: 1 + i, contentType: 'text/plain', state: 'ready', storageKey: id,
    })));
    await postMessage(db(), { actor, channelId: c1, text: 'learn the facts' });
    await postMessage(db(), { actor, channelId: c2, text: 'learn the facts' });
    const view = (r: { channelId: string; tsMicros: bigint; fileId: string; accountId: string }) => `${r.channelId} ${r.tsMicros} ${r.fileId} ${r.accountId}`;
    // A post with a file reads its files first, so two such posts reach their write in one turn
    // only when both reads are answered in one poll of the sockets: tried until they do (each try
    // checked either way).
    let batchedOnce = false;
    for (let attempt = 0; attempt < 20 && !batchedOnce; attempt += 1) {
      const [two, one] = await Promise.all([
        postMessage(db(), { actor, channelId: c1, text: 'two files', attachments: [{ file_id: fileIds[0] }, { file_id: fileIds[1] }, { file_id: fileIds[0] }] }),
        postMessage(db(), { actor, channelId: c2, text: 'one file', attachments: [{ file_id: fileIds[2] }, { url: 'https://l.example/x' }] }),
      ]);
      batchedOnce = (await txOf(c1, two.tsMicros)) === (await txOf(c2, one.tsMicros));
      const recorded = await db().select().from(messageFiles)
        .where(and(inArray(messageFiles.fileId, fileIds), inArray(messageFiles.tsMicros, [two.tsMicros, one.tsMicros])));
      expect(recorded.map(view).sort()).toEqual([
        { channelId: c1, tsMicros: two.tsMicros, fileId: fileIds[0], accountId: a.accountId },
        { channelId: c1, tsMicros: two.tsMicros, fileId: fileIds[1], accountId: a.accountId },
        { channelId: c2, tsMicros: one.tsMicros, fileId: fileIds[2], accountId: a.accountId },
      ].map(view).sort());
      expect(two.attachments).toEqual([
        { file_id: fileIds[0], name: 'f0.txt', size: 1, content_type: 'text/plain' },
        { file_id: fileIds[1], name: 'f1.txt', size: 2, content_type: 'text/plain' },
        { file_id: fileIds[0], name: 'f0.txt', size: 1, content_type: 'text/plain' },
      ]);
    }
    expect(batchedOnce).toBe(true);
  });

  test("a post refused in a batch (not a member, an authentication that no longer holds) writes nothing; the others are written", async () => {
    const a = await messagingAccount(h);
    const bob = await memberCaller(h, a.accountId); // in the account, not in the channel
    const ch = await makeChannel(a.ownerApi);
    const owner = await actorOf(a);
    const bobActor = await actorOf(a, { userId: (await db().select().from(identities).where(eq(identities.id, bob.identityId)))[0].userId!, identityId: bob.identityId });
    const stale = { credentialId: 'key_gone', now: new Date(), role: 'owner', identityId: a.owner.identityId, state: 'active', plan: 'starter' };
    await expect(postMessage(db(), { actor: bobActor, channelId: ch, text: 'learn the facts' })).rejects.toMatchObject({ code: 'not_a_member' });
    await postMessage(db(), { actor: owner, channelId: ch, text: 'learn the facts' });
    const out = await Promise.allSettled([
      postMessage(db(), { actor: owner, channelId: ch, text: 'one' }),
      postMessage(db(), { actor: bobActor, channelId: ch, text: 'not a member' }),
      postMessage(db(), { actor: owner, channelId: ch, text: 'stale', confirm: stale }),
      postMessage(db(), { actor: owner, channelId: ch, text: 'two' }),
    ]);
    expect(out.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'rejected', 'fulfilled']);
    expect((out[1] as PromiseRejectedResult).reason).toMatchObject({ code: 'not_a_member' });
    expect((out[2] as PromiseRejectedResult).reason).toBeInstanceOf(AuthenticationNotConfirmed);
    const [one, two] = [out[0], out[3]].map((o) => (o as PromiseFulfilledResult<MessageRow>).value);
    expect(await txOf(ch, one.tsMicros)).toBe(await txOf(ch, two.tsMicros));
    expect(two.tsMicros > one.tsMicros).toBe(true);
    const rows = await db().select().from(messages).where(eq(messages.channelId, ch)).orderBy(asc(messages.tsMicros));
    expect(rows.map((m) => m.text)).toEqual(['learn the facts', 'one', 'two']);
    const posted = await db().select().from(events).where(and(eq(events.channelId, ch), eq(events.type, 'message.posted')));
    expect(posted).toHaveLength(3);
  });

  test("batches are made per account: another account's post in the same turn never waits behind this account's busy channel", async () => {
    const a = await messagingAccount(h);
    const b = await messagingAccount(h);
    const [busy, quiet] = [await makeChannel(a.ownerApi), await makeChannel(a.ownerApi)];
    const elsewhere = await makeChannel(b.ownerApi);
    const [actorA, actorB] = [await actorOf(a), await actorOf(b)];
    for (const [actor, channelId] of [[actorA, busy], [actorA, quiet], [actorB, elsewhere]] as const) {
      await postMessage(db(), { actor, channelId, text: 'learn the facts' });
    }
    // A transaction holds A's busy channel: A's batch of this turn waits for it, B's post does not.
    const hold = await holdChannel(actorA, busy, 'holds the channel');
    let aPosts!: Promise<MessageRow[]>;
    const bPost = await whileHeld(hold, async () => {
      aPosts = Promise.all([
        postMessage(db(), { actor: actorA, channelId: busy, text: 'behind the hold' }),
        postMessage(db(), { actor: actorA, channelId: quiet, text: 'batched with it' }),
      ]);
      const [mine, other] = await Promise.all([
        postMessage(db(), { actor: actorB, channelId: elsewhere, text: 'not held' }),
        postMessage(db(), { actor: actorB, channelId: elsewhere, text: 'not held either' }),
      ]);
      // Answered while A's channel is still held: A's batch has not committed.
      expect((await db().select().from(messages).where(eq(messages.channelId, quiet))).map((m) => m.text)).toEqual(['learn the facts']);
      return [mine, other];
    });
    await hold.done;
    const [behind, batched] = await aPosts;
    expect(await txOf(busy, behind.tsMicros)).toBe(await txOf(quiet, batched.tsMicros));
    expect(await txOf(elsewhere, bPost[0].tsMicros)).toBe(await txOf(elsewhere, bPost[1].tsMicros));
    expect(await txOf(elsewhere, bPost[0].tsMicros)).not.toBe(await txOf(quiet, batched.tsMicros));
  });

  test('a turn with more posts than a batch holds is cut into batches of MAX_POSTS_PER_BATCH, all written', async () => {
    const a = await messagingAccount(h);
    const ch = await makeChannel(a.ownerApi);
    const actor = await actorOf(a);
    await postMessage(db(), { actor, channelId: ch, text: 'learn the facts' });
    const n = 2 * MAX_POSTS_PER_BATCH + 5;
    const posted = await Promise.all(Array.from({ length: n }, (_, i) => postMessage(db(), { actor, channelId: ch, text: `many ${i}` })));
    expect(new Set(posted.map((m) => m.tsMicros)).size).toBe(n);
    const rows = await db().select().from(messages).where(eq(messages.channelId, ch));
    expect(rows).toHaveLength(n + 1);
    const perCommit = new Map<string, number>();
    for (const m of rows.filter((r) => r.text.startsWith('many '))) {
      const tx = await txOf(ch, m.tsMicros);
      perCommit.set(tx, (perCommit.get(tx) ?? 0) + 1);
    }
    expect([...perCommit.values()].sort((x, y) => x - y)).toEqual([5, MAX_POSTS_PER_BATCH, MAX_POSTS_PER_BATCH]);
  });

  test("a batch that fails as a whole is written post by post: one post's error is never another's, and nothing is written twice", async () => {
    const a = await messagingAccount(h);
    const ch = await makeChannel(a.ownerApi);
    const other = await makeChannel(a.ownerApi);
    const actor = await actorOf(a);
    await postMessage(db(), { actor, channelId: ch, text: 'learn the facts' });
    await postMessage(db(), { actor, channelId: other, text: 'learn the facts' });
    const out = await whileMentionsRefused((marker) => Promise.allSettled([
      postMessage(db(), { actor, channelId: ch, text: 'good one' }),
      postMessage(db(), { actor, channelId: ch, text: `${marker} <!channel>` }),
      postMessage(db(), { actor, channelId: other, text: 'good two' }),
    ]));
    expect(out.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((out[1] as PromiseRejectedResult).reason.message).toMatch(/refused by test/);
    const texts = async (c: string) => (await db().select().from(messages).where(eq(messages.channelId, c)).orderBy(asc(messages.tsMicros))).map((m) => m.text);
    expect(await texts(ch)).toEqual(['learn the facts', 'good one']);
    expect(await texts(other)).toEqual(['learn the facts', 'good two']);
    const posted = await db().select().from(events).where(and(inArray(events.channelId, [ch, other]), eq(events.type, 'message.posted')));
    expect(posted).toHaveLength(4);
  });
});
