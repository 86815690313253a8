import type { Request, Response } from 'express';
import { toPage, type Page } from '@teamchat/core';
import { actorOf, depsOf, locals } from './locals';

export interface ListRequest<K> {
  limit: number;
  /** the keyset to continue after, or null for the first page */
  after: K | null;
}

/** The cursor's binding: this caller, this account, this list (name includes path ids). */
function binding(res: Response, list: string) {
  const actor = actorOf(res);
  return { list: `${actor.accountId}:${list}`, caller: actor.principal.id };
}

/** Reads `limit` and `cursor` (validated by listQuerySchema) and decodes the cursor. */
export function listRequest<K = unknown>(req: Request, res: Response, list: string): ListRequest<K> {
  const { limit, cursor } = locals(res).valid.query as { limit: number; cursor?: string };
  if (!cursor) return { limit, after: null };
  const keyset = depsOf(req).cursors.decode(binding(res, list), cursor);
  return { limit, after: (keyset.length === 1 ? keyset[0] : keyset) as K };
}

/** The cursor that continues `list` after `keyset`, bound to this caller and list. */
function cursorAfter(req: Request, res: Response, list: string, keyset: unknown[]): string {
  return depsOf(req).cursors.encode(binding(res, list), keyset);
}

/** Sends `{ data, next_cursor }` from `limit + 1` fetched rows. */
export function sendPage<R, V>(
  req: Request,
  res: Response,
  list: string,
  rows: R[],
  limit: number,
  view: (row: R) => V,
  keyOf: (row: R) => unknown,
): void {
  const page: Page<V> = toPage(rows, limit, view, (r) => {
    const k = keyOf(r);
    return Array.isArray(k) ? k : [k];
  }, (keyset) => cursorAfter(req, res, list, keyset));
  res.json(page);
}

/**
 * Sends `{ data, next_cursor }` where `data` is the text of a JSON array as PostgreSQL wrote it
 * (the message page: docs/performance.md "The page read"), written into the answer as is rather
 * than parsed and stringified again. `nextKeyset`: the last row's keyset when more rows follow,
 * else null (no cursor).
 */
export function sendPageText(req: Request, res: Response, list: string, data: string, nextKeyset: unknown[] | null): void {
  const next = nextKeyset === null ? null : cursorAfter(req, res, list, nextKeyset);
  res.type('json').send(`{"data":${data},"next_cursor":${JSON.stringify(next)}}`);
}
