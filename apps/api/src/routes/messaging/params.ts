import type { Request } from 'express';
import { AppError, invalidCursor, parseTs } from '@teamchat/core';

/**
 * If-Match carries an ETag from a GET or a write answer: `"3"` (also accepted: `W/"3"`, `3`).
 * `*` means "any version". Returns the expected version, or undefined when absent or `*`.
 */
export function ifMatchVersion(req: Request): number | undefined {
  const raw = req.get('if-match');
  if (raw === undefined || raw.trim() === '*') return undefined;
  const m = /^\s*(?:W\/)?"?(\d{1,9})"?\s*$/.exec(raw);
  if (!m) throw new AppError('invalid_request', 'If-Match must be an ETag from this API, like "3".', { field: 'If-Match' });
  return Number(m[1]);
}

/** Decodes a ts-keyset cursor value (a string of microseconds, so it stays JSON-safe). */
export function tsKeyset(after: unknown): bigint | null {
  if (after === null) return null;
  if (typeof after !== 'string' || !/^\d{1,20}$/.test(after)) throw invalidCursor('malformed');
  return BigInt(after);
}

export { parseTs };
