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

// Allocation (the next ts of a channel under its row lock, so ts order is commit order) is part of
// the post's one statement: messages/post-message-sql.ts.
