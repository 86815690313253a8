import { recordSuccessesSql } from '@teamchat/core';
import { statement } from '@teamchat/db';

/**
 * The delivery path's hot queries as named statements (as the API's post path does, docs/performance.md "What the fast paths rely on"): parsed and
 * planned once per connection, no query builder per delivery, and each transition that used to
 * be a transaction of several round trips written as ONE statement (atomic on its own).
 *
 * BY KEY. The statements defined `{ byKey: true }` keep one generic plan each in the worker
 * (DatabaseOptions.byKeyPool), made on whatever statistics the tables had then, so each must
 * reach every table by its key at every table size. Two ways the planner would walk a backlog
 * instead, and how these statements avoid them:
 * - a condition that matches a partial index's predicate (`status IN ('pending', 'retrying')`:
 *   the index of open rows; `relayed_at IS NULL`: the index of unrelayed events) lets it walk that
 *   whole index, which on an empty table costs as little as a lookup: such a condition is written
 *   `(...) IS TRUE`, the same test that no predicate is proved from;
 * - an `EXISTS` may be planned hashed (one walk of every account's rows): a scalar subquery instead.
 * `test/by-key-plans.test.ts` plans each on an empty database and fails on a table scanned or an
 * index walked (docs/performance.md "Planning in the worker").
 */

/**
 * Fan-out, read side, for a batch of events: those still unrelayed (seq order), each with its
 * account's endpoints enabled since it was raised. By key: the events by id. $1 event ids.
 */
export type FanOutRead = {
  id: string; seq: string; account_id: string; type: string; channel_id: string | null; data: unknown; created_at: Date; relayed_at: Date | null;
  endpoints: Array<{ id: string; payload: string; events: string[]; all_channels: boolean; channel_ids: string[] }>;
  /** whether the event's account has an enabled mirror (its write then queues the mirror lines: FANOUT_WRITE_MIRRORED) */
  mirrored: boolean;
};
/**
 * An event as the fan-out reads it: its columns, its account's endpoints enabled since it was
 * raised, and whether the account has an enabled mirror at all (the write's own join decides
 * which mirrors take the event). `mirrored` is a scalar subquery, not EXISTS (BY KEY above).
 */
const FANOUT_READ_COLUMNS = `
  SELECT e.id, e.seq, e.account_id, e.type, e.channel_id, e.data, e.created_at, e.relayed_at,
         COALESCE((SELECT true FROM mirrors m WHERE m.account_id = e.account_id AND m.enabled AND m.deleted_at IS NULL LIMIT 1), false) AS mirrored,
         COALESCE((
           SELECT json_agg(json_build_object('id', w.id, 'payload', w.payload, 'events', w.events, 'all_channels', w.all_channels, 'channel_ids', w.channel_ids) ORDER BY w.seq)
             FROM webhook_endpoints w
            WHERE w.account_id = e.account_id AND w.enabled AND w.deleted_at IS NULL
              AND w.enabled_at IS NOT NULL AND w.enabled_at <= e.created_at
         ), '[]'::json) AS endpoints
    FROM events e`;
export const FANOUT_READ = statement<FanOutRead>('webhook_fanout_read_many', `${FANOUT_READ_COLUMNS}
   WHERE e.id = ANY($1::text[]) AND (e.relayed_at IS NULL) IS TRUE
   ORDER BY e.seq`, { byKey: true });

/**
 * The relay's scan and the fan-out's read in one (a relay that is caught up fans its scan out
 * itself, relay.ts): unrelayed events from the start, in seq order, as FANOUT_READ reads them.
 * $1 rows at most, $2 only these accounts' events (tests sharing one database) or NULL. By key:
 * its way in is the partial index of unrelayed events in seq order (the scan it is, named in the
 * plans test), then the endpoints and mirrors by account.
 */
export const UNRELAYED_READ = statement<FanOutRead>('webhook_unrelayed_read', `${FANOUT_READ_COLUMNS}
   WHERE e.relayed_at IS NULL AND ($2::text[] IS NULL OR e.account_id = ANY($2::text[]))
   ORDER BY e.seq LIMIT $1`, { byKey: true });

/** A claimed row as a claim answers it: the row and its endpoint as `row_to_json` gives them, its account, its body. */
export type ClaimedRead = { row: Record<string, unknown>; endpoint: Record<string, unknown>; account_id: string; plan: string; state: string; body: string };

/**
 * Fan-out, write side, for a batch, in one statement: marks the events relayed, only those still
 * unrelayed (a concurrent fan-out of the same event waits for the row lock of the one writing it,
 * then finds it relayed and leaves it; both lock in the order of the pkey index scan, so they
 * cannot deadlock), and, only for the events THIS statement marked, stores their bodies and
 * inserts one `pending` delivery per endpoint: an event's first deliveries are written once,
 * with no unique index needed. All or nothing. Events with no matching endpoint are simply
 * marked. (A `FOR UPDATE SKIP LOCKED` subquery here cost a lock record per event in the WAL.)
 * FANOUT_WRITE_MIRRORED, the form for a batch with an event of an account that has an enabled
 * mirror (FanOutRead `mirrored`), also queues the mirror lines of the `message.posted` events it
 * marked (docs/mirrors.md "Which messages"): one line per enabled mirror covering the channel,
 * enabled before the post, whose creator is a member of the channel; written once, like the
 * deliveries. The event's data is read only for events a mirror covers (RETURNING stays narrow).
 * FANOUT_WRITE leaves that part out: the worker plans every execution (DatabaseOptions
 * customPlans), and the mirror lines' seven-table join was most of this statement's planning,
 * ~1.1 of 1.4 ms, on every event of an account without mirrors. Which form runs is decided at
 * the read, as the endpoints are: a mirror enabled after it takes only posts made after that.
 * $1 event ids; $2..$7 bodies (id, account, event id, type, mode, body);
 * $8..$14 deliveries (id, account, endpoint, event id, type, body id, event created_at), written
 * open; $16 the ids of those CLAIMED AT THE WRITE until $15 (the rows the dispatcher will give
 * a slot at once, dispatcher.ts `claimable`), the others unclaimed (the pipeline claims each
 * right before its attempt). Each claimed row is answered in `claimed` as CLAIM_AND_READ answers
 * a claim: the row as written, its endpoint and account as they are in this statement, its body.
 * By key: the events, endpoints and accounts by id, the mirror lines' join by keys.
 */
/** The fan-out write's one answer row (fan-out.ts `FanOutWritten` is what writeFanOut makes of it). */
type FanOutWriteRow = { relayed: string[]; ids: string[]; claimed: ClaimedRead[] };
function fanOutWriteText(mirrored: boolean): string {
  return `
  WITH relayed AS (
    UPDATE events SET relayed_at = now()
     WHERE id = ANY($1::text[]) AND (relayed_at IS NULL) IS TRUE
    RETURNING id, account_id, type, channel_id, created_at
${mirrored ? MIRROR_LINES_CTE : ''}  ), bodies AS (
    INSERT INTO webhook_bodies (id, account_id, event_id, event_type, mode, body)
    SELECT b.id, b.account_id, b.event_id, b.event_type, b.mode, b.body
      FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[]) AS b(id, account_id, event_id, event_type, mode, body)
      JOIN relayed r ON r.id = b.event_id
    RETURNING id, body
  ), deliveries AS (
    INSERT INTO webhook_deliveries (id, chain_id, attempt, status, kind, account_id, endpoint_id, event_id, event_type, body_id, event_created_at, claimed_until)
    SELECT d.id, d.id, 1, 'pending', 'event', d.account_id, d.endpoint_id, d.event_id, d.event_type, d.body_id, d.created_at,
           CASE WHEN d.id = ANY($16::text[]) THEN $15::timestamptz END
      FROM unnest($8::text[], $9::text[], $10::text[], $11::text[], $12::text[], $13::text[], $14::timestamptz[])
           AS d(id, account_id, endpoint_id, event_id, event_type, body_id, created_at)
      JOIN relayed r ON r.id = d.event_id
    RETURNING *
  )
  SELECT COALESCE((SELECT array_agg(id) FROM relayed), '{}'::text[]) AS relayed,
         COALESCE((SELECT array_agg(id) FROM deliveries), '{}'::text[]) AS ids,
         (SELECT count(*) FROM bodies)::int AS bodies,
         COALESCE((
           SELECT json_agg(json_build_object('row', row_to_json(d), 'endpoint', row_to_json(w), 'account_id', a.id, 'plan', a.plan, 'state', a.state, 'body', b.body))
             FROM deliveries d
             JOIN webhook_endpoints w ON w.id = d.endpoint_id
             JOIN accounts a ON a.id = d.account_id
             JOIN bodies b ON b.id = d.body_id
            WHERE d.claimed_until IS NOT NULL
         ), '[]'::json) AS claimed`;
}
/** The mirror lines' part of the fan-out write (its 7-way join alone took ~1.1 ms to plan on every call). */
const MIRROR_LINES_CTE = `
  ), mirrored AS (
    INSERT INTO mirror_lines (mirror_id, account_id, event_id, channel_name, author_name, text, is_reply)
    SELECT m.id, r.account_id, r.id, c.name, a.name, e.data->'content'->>'text', e.data->>'thread_ts' IS NOT NULL
      FROM relayed r
      JOIN mirrors m ON m.account_id = r.account_id AND m.enabled AND m.deleted_at IS NULL
                    AND m.enabled_at <= r.created_at AND r.channel_id = ANY(m.channel_ids)
      JOIN events e ON e.id = r.id
      JOIN channels c ON c.id = r.channel_id AND c.kind = 'channel'
      JOIN identities a ON a.id = e.data->>'author'
      JOIN identities p ON p.account_id = m.account_id AND p.user_id = m.created_by_user_id AND p.kind = 'person'
      JOIN channel_members cm ON cm.channel_id = r.channel_id AND cm.identity_id = p.id
     WHERE r.type = 'message.posted'
    ON CONFLICT (mirror_id, event_id) DO NOTHING
`;
export const FANOUT_WRITE = statement<FanOutWriteRow>('webhook_fanout_write', fanOutWriteText(false), { byKey: true });
export const FANOUT_WRITE_MIRRORED = statement<FanOutWriteRow>('webhook_fanout_write_mirrored', fanOutWriteText(true), { byKey: true });

/**
 * Open rows of one account, due and not under a live claim, oldest first: a dispatcher's lane
 * that had to leave rows in the database (it was full) takes more from here as it drains.
 * $1 account, $2 now, $3 rows at most.
 */
export const OPEN_ROWS_OF_ACCOUNT = statement<{ id: string; endpoint_id: string }>('webhook_open_rows_of_account', `
  SELECT id, endpoint_id FROM webhook_deliveries
   WHERE account_id = $1 AND status IN ('pending', 'retrying')
     AND (next_retry_at IS NULL OR next_retry_at <= $2)
     AND (claimed_until IS NULL OR claimed_until < $2)
   ORDER BY COALESCE(next_retry_at, created_at), seq
   LIMIT $3`);

/**
 * The relay's scan: unrelayed events in seq order (the partial index events_unrelayed_idx), after
 * seq $2 (-1: from the start). $1 rows at most.
 */
export const UNRELAYED = statement<{ id: string; seq: string }>('webhook_unrelayed_after', `
  SELECT id, seq FROM events WHERE relayed_at IS NULL AND seq > $2 ORDER BY seq LIMIT $1`);

/**
 * The claim stage in one statement (spec: no two workers attempt one delivery at once): claims
 * the rows of $1 that are open, due and not under a live claim until $2, and answers each claimed row with everything its attempt needs, as
 * it is now (the row, its endpoint, its account, its body), for the pipeline to judge with the
 * one eligibility rule. Rows it did not claim are not answered. By key: the rows by id, then
 * their endpoint, account and body by id. $1 ids, $2 until, $3 now.
 */
export const CLAIM_AND_READ = statement<ClaimedRead>('webhook_claim_and_read', `
  WITH claimed AS (
    UPDATE webhook_deliveries SET claimed_until = $2
     WHERE id = ANY($1::text[]) AND (status IN ('pending', 'retrying')) IS TRUE
       AND (next_retry_at IS NULL OR next_retry_at <= $3)
       AND (claimed_until IS NULL OR claimed_until < $3)
    RETURNING *
  )
  SELECT row_to_json(c) AS row, row_to_json(w) AS endpoint, a.id AS account_id, a.plan, a.state, b.body
    FROM claimed c
    JOIN webhook_endpoints w ON w.id = c.endpoint_id
    JOIN accounts a ON a.id = c.account_id
    JOIN webhook_bodies b ON b.id = c.body_id`, { byKey: true });

/**
 * The common outcome in one statement: 2xx answers within the slow bar close their rows
 * `delivered` under their claims (the fence: each row still open, still claimed by us, with the
 * claim it was attempted under: rows of one round may come from batches with different claims)
 * and, only for the rows it closed, record each endpoint's health once (recordSuccessesSql, the
 * rule a single attempt's recordHealth runs too; rounds close concurrently, since a round gives
 * its slots back before it records). One row for a single attempt, several for a batch round.
 * $1 ids, $2 claims, $3 status codes, $4 latencies ms, $5 each row's answer time (its
 * `attempted_at`: when the answer was read, not when this close runs, which may gather answers
 * for a few ms), $6 the latest of those (the endpoints' last success), $7..$8 the
 * rows' `created_at` bounds (the partition key: a plan made with them touches only the partitions the
 * rows are in, where one without them planned and probed every weekly partition for each row:
 * 0.55 ms of planning per call, against 0.22). By key: the rows by id (`d.id = ANY($1)` as well
 * as the join on the input, so the index condition starts with the key: without it, its one
 * generic plan could walk the partition's key index by `created_at` alone), the endpoints by id.
 * Answers the ids it closed (a row whose claim was lost is not among them).
 */
export const CLOSE_DELIVERED = statement<{ ids: string[] }>('webhook_close_delivered_claims', `
  WITH input AS (
    SELECT * FROM unnest($1::text[], $2::timestamptz[], $3::int[], $4::int[], $5::timestamptz[]) AS i(id, claim, response_status, latency_ms, attempted_at)
  ), closed AS (
    UPDATE webhook_deliveries d
       SET status = 'delivered', response_status = i.response_status, latency_ms = i.latency_ms, error = NULL,
           attempted_at = i.attempted_at, claimed_until = NULL, next_retry_at = NULL
      FROM input i
     WHERE d.id = ANY($1::text[]) AND d.id = i.id AND d.created_at >= $7 AND d.created_at < $8 AND d.claimed_until = i.claim AND (d.status IN ('pending', 'retrying')) IS TRUE
    RETURNING d.id, d.endpoint_id
  ), ${recordSuccessesSql('SELECT endpoint_id FROM closed', '$6::timestamptz')}
  SELECT COALESCE((SELECT array_agg(id) FROM closed), '{}'::text[]) AS ids, (SELECT count(*) FROM health)::int AS health`, { byKey: true });

/**
 * Gives back claims that will not be sent on (a claim grown old before its slot came, a row
 * claimed at a fan-out's write that its dispatcher did not take, a pipeline that failed before
 * sending, a closing dispatcher's claims ahead), so the next attempt can claim the rows at once.
 * Only rows still open and still under that claim. By key: the rows by id. $1 ids, $2 the claim.
 */
export const RELEASE_CLAIMS = statement<{ id: string }>('webhook_release_claims', `
  UPDATE webhook_deliveries SET claimed_until = NULL
   WHERE id = ANY($1::text[]) AND claimed_until = $2 AND (status IN ('pending', 'retrying')) IS TRUE
  RETURNING id`, { byKey: true });
