import { sql, type Executor } from '@teamchat/db';
import { errors } from '../errors';

/**
 * Message `ts`: Slack-style "<unix seconds>.<6 digits>" (microseconds). It is stored as a bigint
 * of microseconds (`ts_micros`) and is the message's id in paths.
 */
export const TS_PATTERN = /^(\d{1,12})\.(\d{6})$/;
const MICROS = BigInt(1_000_000);

export function formatTs(micros: bigint): string {
  return `${micros / MICROS}.${(micros % MICROS).toString().padStart(6, '0')}`;
}

/** Parses a ts; throws 400 invalid_request naming `field` when malformed. */
export function parseTs(ts: string, field = 'ts'): bigint {
  const m = TS_PATTERN.exec(ts);
  if (!m) throw errors.invalid(`${field} must look like "1700000000.000001".`, { field });
  return BigInt(m[1]) * MICROS + BigInt(m[2]);
}

/**
 * Allocates the next ts of a channel, under the channel row's lock: the wall clock in
 * microseconds, or one more than the last ts if the clock has not moved past it (same
 * microsecond, clock skew between API processes). The lock is held until commit, so ts order
 * is also commit order: a reader paging by ts never misses a message committed later with a
 * smaller ts. Only succeeds when `identityId` is a member; returns undefined otherwise (or
 * when the channel does not exist in the account) so the caller can tell which.
 */
export async function allocateTs(
  tx: Executor,
  input: { accountId: string; channelId: string; identityId: string },
): Promise<{ tsMicros: bigint; kind: string } | undefined> {
  const result = await tx.execute<{ last_ts_micros: string; kind: string }>(sql`
    UPDATE channels
       SET last_ts_micros = GREATEST(last_ts_micros + 1, (extract(epoch FROM clock_timestamp()) * 1000000)::bigint)
     WHERE id = ${input.channelId}
       AND account_id = ${input.accountId}
       AND EXISTS (SELECT 1 FROM channel_members m WHERE m.channel_id = ${input.channelId} AND m.identity_id = ${input.identityId})
 RETURNING last_ts_micros::text AS last_ts_micros, kind`);
  const row = result.rows[0];
  return row ? { tsMicros: BigInt(row.last_ts_micros), kind: row.kind } : undefined;
}
