import Joi from 'joi';
import { asc, desc, gt, lt, type AnyColumn } from '@teamchat/db';
import { invalidCursor } from './cursor';
import { queryInteger } from './input-rules';

/** `?limit=` 1..200 in digits only (queryInteger), default 50; `?cursor=` opaque, at most 2,048 characters. */
export const LIST_LIMIT_DEFAULT = 50;
export const LIST_LIMIT_MAX = 200;
export const CURSOR_MAX_LENGTH = 2048;

export const listQuerySchema = {
  limit: queryInteger().min(1).max(LIST_LIMIT_MAX).default(LIST_LIMIT_DEFAULT),
  // Whatever Joi finds wrong with `cursor` (empty, too long, repeated so it arrives as a list)
  // makes it a malformed cursor: the schema answers invalid_cursor itself, not invalid_request
  // (validate.ts passes a schema's own AppError through); `limit` keeps invalid_request.
  cursor: Joi.string().max(CURSOR_MAX_LENGTH).error(() => invalidCursor('malformed')),
};

export interface Page<T> {
  data: T[];
  next_cursor: string | null;
}

/**
 * Turns `limit + 1` fetched rows into a page: the extra row only tells there is more; the
 * cursor carries the keyset of the last row returned.
 */
export function toPage<R, V>(
  rows: R[],
  limit: number,
  view: (row: R) => V,
  keyOf: (row: R) => unknown[],
  cursorFor: (keyset: unknown[]) => string,
): Page<V> {
  const more = rows.length > limit;
  const kept = more ? rows.slice(0, limit) : rows;
  return {
    data: kept.map(view),
    next_cursor: more ? cursorFor(keyOf(kept[kept.length - 1])) : null,
  };
}

/**
 * The keyset half of a list query over a unique, immutable `seq` column: the condition that
 * continues after the cursor's row, and the order. Every `seq`-ordered list uses it.
 */
export function seqKeyset(column: AnyColumn, after: number | null, direction: 'asc' | 'desc') {
  return {
    after: after === null ? undefined : direction === 'asc' ? gt(column, after) : lt(column, after),
    order: direction === 'asc' ? asc(column) : desc(column),
  };
}
