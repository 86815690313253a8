import { statement } from '@teamchat/db';
import { authenticationConfirmedExpr, authenticationConfirmedSql } from '../../auth/remembered-authentications';

/**
 * The two named statements of a post (docs/performance.md, 'The post path'; see post-message.ts for how they are used).
 * A post costs them plus authentication: three round trips (two when the facts are already known,
 * post-facts-cache.ts), no BEGIN/COMMIT without an Idempotency-Key.
 */

/** `ts` in microseconds formatted as formatTs does: "<seconds>.<6 digits>". */
const TS_SQL = (col: string) => `(${col} / 1000000)::text || '.' || lpad((${col} % 1000000)::text, 6, '0')`;

export interface PostFacts {
  kind: string;
  member: boolean;
  /** the thread's root (a reply to a reply joins the root's thread), when a thread ts was given and names one */
  root_ts: string | null;
  root_author: string | null;
  /** the mentioned ids that are identities of the account (any order) */
  mentioned: string[];
  /** a DM's members, in the order they were added (fixed when it is opened); empty for a channel */
  dm_members: string[];
}

/**
 * Read-only, taken before the channel's lock (so the lock stays short): $1 channel, $2 account,
 * $3 poster's identity, $4 thread ts (µs, or null), $5 mentioned ids. No row: no such channel in
 * the account.
 */
export const postFacts = statement<PostFacts>('post_message_facts', `
  SELECT c.kind,
         EXISTS (SELECT 1 FROM channel_members cm WHERE cm.channel_id = c.id AND cm.identity_id = $3::text) AS member,
         r.ts_micros::text AS root_ts, r.author_identity_id AS root_author,
         CASE WHEN cardinality($5::text[]) = 0 THEN '{}'::text[]
              ELSE ARRAY(SELECT i.id FROM identities i WHERE i.account_id = $2::text AND i.id = ANY ($5::text[])) END AS mentioned,
         CASE WHEN c.kind = 'dm'
              THEN ARRAY(SELECT cm.identity_id FROM channel_members cm WHERE cm.channel_id = c.id ORDER BY cm.seq)
              ELSE '{}'::text[] END AS dm_members
    FROM channels c
    LEFT JOIN LATERAL (
      SELECT m.ts_micros, m.author_identity_id
        FROM messages m
       WHERE $4::bigint IS NOT NULL
         AND m.channel_id = c.id
         AND m.ts_micros = COALESCE((SELECT p.thread_ts_micros FROM messages p WHERE p.channel_id = c.id AND p.ts_micros = $4::bigint), $4::bigint)
         AND m.thread_ts_micros IS NULL
    ) r ON true
   WHERE c.id = $1::text AND c.account_id = $2::text`);

export interface PostWritten {
  /** the remembered authentication still holds ($13 null: none to confirm); false: nothing was written */
  authenticated: boolean;
  /** the ts was allocated (the poster is still a member) */
  locked: boolean;
  /** null when nothing was inserted */
  ts_micros: string | null;
  attachments: unknown;
  links: unknown;
  session: unknown;
  created_at: Date | null;
}

/**
 * The post itself, ONE statement (atomic without BEGIN/COMMIT; inside the caller's transaction
 * when there is one):
 * - `ch`: the next ts of the channel under its row lock — the wall clock in µs, or one more than
 *   the last ts if the clock has not moved past it (same microsecond, clock skew between API
 *   processes) — only if the poster is a member. The lock is held until commit, so ts order is
 *   commit order: a reader paging by ts never misses a message committed later with a smaller ts.
 * - `queued`: before the row, the channel's queue lock (a transaction-scoped advisory lock named
 *   for the channel, `channel-posts:<id>`), so that posts waiting for one channel go in arrival
 *   order. Waiters on a row lock all wake when its holder commits and race for the row, the
 *   losers waiting again; on a busy channel that race cost throughput and set the tail
 *   (docs/performance.md "One channel is serial"). The row lock is then taken without a wait.
 *   Only a confirmed member of the channel, in the caller's account, joins the queue: a caller
 *   from elsewhere is refused without waiting behind the channel's posts or holding them up.
 * - `root`: a reply bumps its thread root's reply_count (after the lock: `ch` gates it);
 * - `msg`: the message, only if the ts was taken and, for a reply, the root is still there;
 * - `mf`: which files the message attaches (message_files), from $6's `file_id`s, already
 *   checked by the caller (files/attachments.ts);
 * - the event rows, built by the events module and passed as $12 (`[[id, type, channel_id, data], …]`
 *   in order), each `data` completed with the allocated `ts`;
 * - `auth`: for a post authenticated from memory ($13 the credential), that the credential is
 *   neither revoked nor expired at $14 (the application's clock) and that the seat's role $15 and
 *   identity $16 and the account's state $17 and plan $18 are what the authentication decided
 *   on (remembered-authentications.ts); `ch` gates on it, so when it fails nothing is written;
 * The relay is woken after the commit by the caller (RelayWakeUps), not by a NOTIFY here: a
 * NOTIFY holds PostgreSQL's notify lock through the commit, so every post would wait for the
 * commit of the one before it.
 * $1 channel, $2 account, $3 author, $4 root ts (µs or null), $5 text, $6 attachments, $7 links,
 * $8 mentions, $9 broadcast, $10 client_ref, $11 session, $12 events, $13-$18 the authentication
 * to confirm (all null: none). Always one row.
 */
export const postWrite = statement<PostWritten>('post_message', `
  WITH auth AS (
    SELECT ${authenticationConfirmedSql(13, '$2::text')} AS ok
  ), queued AS (
    SELECT pg_advisory_xact_lock(hashtextextended('channel-posts:' || $1::text, 0))
      FROM channels c JOIN channel_members m ON m.channel_id = c.id AND m.identity_id = $3::text
     WHERE c.id = $1::text AND c.account_id = $2::text AND (SELECT ok FROM auth)
  ), ch AS (
    UPDATE channels
       SET last_ts_micros = GREATEST(last_ts_micros + 1, (extract(epoch FROM clock_timestamp()) * 1000000)::bigint)
     WHERE id = $1::text AND account_id = $2::text
       AND (SELECT ok FROM auth) AND EXISTS (SELECT 1 FROM queued)
       AND EXISTS (SELECT 1 FROM channel_members m WHERE m.channel_id = $1::text AND m.identity_id = $3::text)
 RETURNING last_ts_micros AS ts
  ), root AS (
    UPDATE messages SET reply_count = reply_count + 1
     WHERE $4::bigint IS NOT NULL AND EXISTS (SELECT 1 FROM ch)
       AND channel_id = $1::text AND ts_micros = $4::bigint AND thread_ts_micros IS NULL
 RETURNING ts_micros
  ), msg AS (
    INSERT INTO messages (channel_id, ts_micros, account_id, author_identity_id, text, attachments, links,
                          thread_ts_micros, mentions, broadcast, client_ref, session)
    SELECT $1::text, ch.ts, $2::text, $3::text, $5::text, $6::jsonb, $7::jsonb,
           $4::bigint, $8::text[], $9::boolean, $10::text, $11::jsonb
      FROM ch
     WHERE $4::bigint IS NULL OR EXISTS (SELECT 1 FROM root)
 RETURNING ts_micros, attachments, links, session, created_at
  ), mf AS (
    INSERT INTO message_files (channel_id, ts_micros, file_id, account_id)
    SELECT DISTINCT $1::text, msg.ts_micros, a.v->>'file_id', $2::text
      FROM msg, jsonb_array_elements($6::jsonb) AS a(v)
     WHERE a.v ? 'file_id'
  ), ev AS (
    INSERT INTO events (id, account_id, type, channel_id, data)
    SELECT e.v->>0, $2::text, e.v->>1, e.v->>2, (e.v->3) || jsonb_build_object('ts', ${TS_SQL('msg.ts_micros')})
      FROM msg, jsonb_array_elements($12::jsonb) WITH ORDINALITY AS e(v, n)
     ORDER BY e.n
 RETURNING id
  )
  SELECT (SELECT ok FROM auth) AS authenticated, EXISTS (SELECT 1 FROM ch) AS locked,
         msg.ts_micros::text AS ts_micros, msg.attachments, msg.links, msg.session, msg.created_at
    FROM (VALUES (1)) AS one (x) LEFT JOIN msg ON true`);

/**
 * Several top-level posts of one account in ONE statement (post-batch.ts: the account's posts of
 * one event-loop turn on a busy process): each row is checked and written exactly as `post_message` checks and writes one
 * post, and the batch commits once. Per row `i` (the posts in arrival order):
 * - `auth`: its remembered authentication still holds (or it has none to confirm);
 * - `elig`: that, and its poster is a member of the channel in its account;
 * - `queued`: the queue lock of every channel with an eligible post, taken in channel order so
 *   that two batches never wait for each other in a cycle; all of them before any channel's row
 *   (the InitPlan `(SELECT count(*) FROM queued)` is evaluated once, before the UPDATE);
 * - `ch`: each such channel's counter moved by its number of posts, as `post_message` moves it
 *   for one: the k-th post of a channel gets GREATEST(last, clock − 1) + k, so ts order is arrival
 *   order within the batch and commit order across batches (the row lock is held to commit);
 * - `msg`, `mf`, `ev`: the messages, their files and their event rows, events in arrival order.
 * A row that fails a check writes nothing and answers as `post_message` would (`authenticated`,
 * `locked`). An error (any exception) rolls the whole statement back; the caller then posts each
 * one by itself.
 * $1 channels, $2 accounts, $3 authors, $4 texts, $5 attachments (jsonb), $6 links (jsonb), $7
 * mentions (jsonb arrays of ids), $8 broadcast, $9 client_refs, $10 sessions (jsonb or null),
 * $11 events (jsonb, each post's `[[id, type, channel_id, data], …]`), $12-$17 the
 * authentications to confirm (credential null: none). One row per post, in order.
 */
export const postWriteBatch = statement<PostWritten>('post_message_batch', `
  WITH p AS MATERIALIZED (
    SELECT *
      FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::jsonb[], $6::jsonb[], $7::jsonb[], $8::boolean[],
                  $9::text[], $10::jsonb[], $11::jsonb[], $12::text[], $13::timestamptz[], $14::text[], $15::text[], $16::text[], $17::text[])
           WITH ORDINALITY AS p (channel, account, author, body, attachments, links, mentions, broadcast,
                                 client_ref, session, events, credential, at, role, identity, state, plan, i)
  ), auth AS MATERIALIZED (
    SELECT p.i, ${authenticationConfirmedExpr({ credential: 'p.credential', now: 'p.at', role: 'p.role', identity: 'p.identity', state: 'p.state', plan: 'p.plan' }, 'p.account')} AS ok
      FROM p
  ), elig AS MATERIALIZED (
    SELECT p.i, p.channel, p.account
      FROM p JOIN auth ON auth.i = p.i
     WHERE auth.ok
       AND EXISTS (SELECT 1 FROM channels c JOIN channel_members m ON m.channel_id = c.id AND m.identity_id = p.author
                    WHERE c.id = p.channel AND c.account_id = p.account)
  ), queued AS MATERIALIZED (
    SELECT pg_advisory_xact_lock(hashtextextended('channel-posts:' || s.channel, 0))
      FROM (SELECT DISTINCT channel FROM elig ORDER BY channel) s
  ), n AS (
    SELECT channel, account, count(*)::bigint AS cnt FROM elig GROUP BY channel, account
  ), ch AS (
    UPDATE channels c
       SET last_ts_micros = GREATEST(c.last_ts_micros, (extract(epoch FROM clock_timestamp()) * 1000000)::bigint - 1) + n.cnt
      FROM n
     WHERE c.id = n.channel AND c.account_id = n.account AND (SELECT count(*) FROM queued) > 0
 RETURNING c.id AS channel, c.last_ts_micros - n.cnt AS base
  ), placed AS MATERIALIZED (
    SELECT p.i, p.channel, p.account, p.author, p.body, p.attachments, p.links, p.mentions, p.broadcast, p.client_ref,
           p.session, p.events, ch.base + row_number() OVER (PARTITION BY p.channel ORDER BY p.i) AS ts
      FROM p JOIN elig ON elig.i = p.i JOIN ch ON ch.channel = p.channel
  ), msg AS (
    INSERT INTO messages (channel_id, ts_micros, account_id, author_identity_id, text, attachments, links,
                          thread_ts_micros, mentions, broadcast, client_ref, session)
    SELECT channel, ts, account, author, body, attachments, links,
           NULL, ARRAY(SELECT jsonb_array_elements_text(mentions)), broadcast, client_ref, session
      FROM placed
 RETURNING channel_id, ts_micros, attachments, links, session, created_at
  ), mf AS (
    INSERT INTO message_files (channel_id, ts_micros, file_id, account_id)
    SELECT DISTINCT placed.channel, placed.ts, a.v->>'file_id', placed.account
      FROM placed JOIN msg ON msg.channel_id = placed.channel AND msg.ts_micros = placed.ts,
           jsonb_array_elements(placed.attachments) AS a(v)
     WHERE a.v ? 'file_id'
  ), ev AS (
    INSERT INTO events (id, account_id, type, channel_id, data)
    SELECT e.v->>0, placed.account, e.v->>1, e.v->>2, (e.v->3) || jsonb_build_object('ts', ${TS_SQL('placed.ts')})
      FROM placed JOIN msg ON msg.channel_id = placed.channel AND msg.ts_micros = placed.ts,
           jsonb_array_elements(placed.events) WITH ORDINALITY AS e(v, n)
     ORDER BY placed.i, e.n
 RETURNING id
  )
  SELECT auth.ok AS authenticated, placed.i IS NOT NULL AS locked,
         msg.ts_micros::text AS ts_micros, msg.attachments, msg.links, msg.session, msg.created_at
    FROM p
    JOIN auth ON auth.i = p.i
    LEFT JOIN placed ON placed.i = p.i
    LEFT JOIN msg ON msg.channel_id = placed.channel AND msg.ts_micros = placed.ts
   ORDER BY p.i`);
