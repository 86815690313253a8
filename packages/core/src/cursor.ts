import { AppError } from './errors';
import { hmacHex, safeEqual } from './crypto';

/** Cursors live 24 hours (decision in docs/api.md). */
export const CURSOR_TTL_MS = 24 * 60 * 60 * 1000;

export interface CursorBinding {
  /** the list it came from, e.g. `acct_x:channels` or `acct_x:messages:ch_y` */
  list: string;
  /** the caller it was issued to (credential or session principal) */
  caller: string;
}

interface CursorBody {
  l: string;
  c: string;
  e: number;
  k: unknown[];
}

/** 400 invalid_cursor (spec: a malformed, expired or foreign cursor), saying `why`: the one place this error is made. */
export const invalidCursor = (why: string): AppError => new AppError('invalid_cursor', `The cursor is ${why}.`);

/**
 * Opaque signed cursors: base64url(JSON) + "." + HMAC. The keyset values `k` are whatever the
 * list orders by (last row's sort key); the binding makes a cursor useless on another list or
 * for another caller.
 */
export class CursorCodec {
  constructor(private readonly key: Buffer, private readonly now: () => number = Date.now) {}

  encode(binding: CursorBinding, keyset: unknown[]): string {
    const body: CursorBody = { l: binding.list, c: binding.caller, e: this.now() + CURSOR_TTL_MS, k: keyset };
    const payload = Buffer.from(JSON.stringify(body)).toString('base64url');
    return `${payload}.${hmacHex(this.key, payload).slice(0, 32)}`;
  }

  decode(binding: CursorBinding, cursor: string): unknown[] {
    const [payload, sig, extra] = cursor.split('.');
    if (!payload || !sig || extra !== undefined) throw invalidCursor('malformed');
    if (!safeEqual(sig, hmacHex(this.key, payload).slice(0, 32))) throw invalidCursor('malformed');
    let body: CursorBody;
    try {
      body = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as CursorBody;
    } catch {
      throw invalidCursor('malformed');
    }
    if (!Array.isArray(body.k) || typeof body.e !== 'number') throw invalidCursor('malformed');
    if (body.e < this.now()) throw invalidCursor('expired');
    if (body.l !== binding.list || body.c !== binding.caller) throw invalidCursor('not yours or not for this list');
    return body.k;
  }
}

