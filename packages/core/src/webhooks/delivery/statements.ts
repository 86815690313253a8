import { statement } from '@teamchat/db';

/**
 * The delivery path's hot queries as named statements (as issue 10 did for the API): parsed and
 * planned once per connection, no query builder per delivery, and each transition that used to
 * be a transaction of several round trips written as ONE statement (atomic on its own).
 */

/** Fan-out, read side: the unrelayed event and its account's endpoints enabled since it was raised. */
export const FANOUT_READ = statement<{
  id: string; seq: string; account_id: string; type: string; channel_id: string | null; data: unknown; created_at: Date; relayed_at: Date | null;
  endpoints: Array<{ id: string; payload: string; events: string[]; all_channels: boolean; channel_ids: string[] }>;
}>('webhook_fanout_read', `
  SELECT e.id, e.seq, e.account_id, e.type, e.channel_id, e.data, e.created_at, e.relayed_at,
         COALESCE((
           SELECT json_agg(json_build_object('id', w.id, 'payload', w.payload, 'events', w.events, 'all_channels', w.all_channels, 'channel_ids', w.channel_ids) ORDER BY w.seq)
             FROM webhook_endpoints w
            WHERE w.account_id = e.account_id AND w.enabled AND w.deleted_at IS NULL
              AND w.enabled_at IS NOT NULL AND w.enabled_at <= e.created_at
         ), '[]'::json) AS endpoints
    FROM events e
   WHERE e.id = $1 AND e.relayed_at IS NULL`);

/**
 * Fan-out, write side, in one statement: marks the event relayed (only if it still is not: a
 * second fan-out of the same event waits on the row lock, then finds it relayed and writes
 * nothing), stores its bodies and inserts one `pending` delivery per endpoint. All or nothing.
 * $1 event id, $2 account, $3 type, $4 event created_at, $5/$6/$7 body ids/modes/bodies,
 * $8/$9/$10 delivery ids/endpoint ids/body ids.
 */
export const FANOUT_WRITE = statement<{ relayed: number; ids: string[] }>('webhook_fanout_write', `
  WITH relayed AS (
    UPDATE events SET relayed_at = now() WHERE id = $1 AND relayed_at IS NULL RETURNING id
  ), bodies AS (
    INSERT INTO webhook_bodies (id, account_id, event_id, event_type, mode, body)
    SELECT b.id, $2::text, $1::text, $3::text, b.mode, b.body
      FROM unnest($5::text[], $6::text[], $7::text[]) AS b(id, mode, body), relayed
    RETURNING id
  ), deliveries AS (
    INSERT INTO webhook_deliveries (id, chain_id, attempt, status, kind, account_id, endpoint_id, event_id, event_type, body_id, event_created_at)
    SELECT d.id, d.id, 1, 'pending', 'event', $2::text, d.endpoint_id, $1::text, $3::text, d.body_id, $4::timestamptz
      FROM unnest($8::text[], $9::text[], $10::text[]) AS d(id, endpoint_id, body_id), relayed
    ON CONFLICT (endpoint_id, event_id) WHERE kind = 'event' AND attempt = 1 DO NOTHING
    RETURNING id
  )
  SELECT (SELECT count(*) FROM relayed)::int AS relayed,
         COALESCE((SELECT array_agg(id) FROM deliveries), '{}'::text[]) AS ids,
         (SELECT count(*) FROM bodies)::int AS bodies`);

/** Marks an event with no matching endpoint relayed. */
export const MARK_RELAYED = statement<{ id: string }>('webhook_mark_relayed', `
  UPDATE events SET relayed_at = now() WHERE id = $1 AND relayed_at IS NULL RETURNING id`);

/** The relay's scan: unrelayed events in seq order (the partial index events_unrelayed_idx). */
export const UNRELAYED = statement<{ id: string }>('webhook_unrelayed', `
  SELECT id FROM events WHERE relayed_at IS NULL ORDER BY seq LIMIT $1`);

/**
 * The claim of one attempt (spec: no two workers attempt one delivery at once): the row, still
 * open, due, and not under a live claim, is claimed until $2. $1 id, $2 until, $3 now.
 */
export const CLAIM = statement<{ id: string }>('webhook_claim', `
  UPDATE webhook_deliveries SET claimed_until = $2
   WHERE id = $1 AND status IN ('pending', 'retrying')
     AND (next_retry_at IS NULL OR next_retry_at <= $3)
     AND (claimed_until IS NULL OR claimed_until < $3)
  RETURNING id`);

/**
 * The common outcome in one statement: a 2xx within the slow bar closes the row `delivered`
 * under our claim (the fence: this row, still open, still claimed by us) and, only if it did,
 * records the endpoint's health (skipped when nothing changes much, as recordHealth does).
 * $1 id, $2 claim, $3 status code, $4 latency ms, $5 now, $6 now − 1 s.
 */
export const CLOSE_DELIVERED = statement<{ closed: number }>('webhook_close_delivered', `
  WITH closed AS (
    UPDATE webhook_deliveries
       SET status = 'delivered', response_status = $3, latency_ms = $4, error = NULL, attempted_at = $5, claimed_until = NULL, next_retry_at = NULL
     WHERE id = $1 AND claimed_until = $2 AND status IN ('pending', 'retrying')
    RETURNING endpoint_id
  ), health AS (
    UPDATE webhook_endpoints w SET last_success_at = $5, failing_since = NULL
      FROM closed
     WHERE w.id = closed.endpoint_id
       AND (w.failing_since IS NOT NULL OR w.last_success_at IS NULL OR w.last_success_at < $6)
    RETURNING w.id
  )
  SELECT (SELECT count(*) FROM closed)::int AS closed, (SELECT count(*) FROM health)::int AS health`);
