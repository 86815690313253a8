import { createHash } from 'node:crypto';
import { and, eq, idempotencyKeys, lt, sql, type Executor } from '@teamchat/db';
import { decryptSecret, encryptSecret } from './crypto';
import { AppError } from './errors';

/** Keys are remembered for 24 hours (spec: Limits rule 4). */
export const IDEMPOTENCY_WINDOW_MS = 24 * 60 * 60 * 1000;

export interface IdempotencyScope {
  /** the credential's person */
  userId: string;
  /** the method and the matched route with its decoded parameters, e.g. `POST /accounts/acct_x/channels` (apps/api create.ts) */
  route: string;
  key: string;
}

export interface StoredResponse {
  status: number;
  body: unknown;
  headers: Record<string, string>;
}

/** Canonical JSON (sorted keys) so that the same body in another key order is the same request. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    const obj = value as Record<string, unknown>;
    return `{${Object.keys(obj).sort().filter((k) => obj[k] !== undefined).map((k) => `${JSON.stringify(k)}:${canonical(obj[k])}`).join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}

export function requestHash(body: unknown): string {
  return createHash('sha256').update(canonical(body)).digest('hex');
}

/**
 * Stored response bodies are always sealed with AES-256-GCM (a key derived from SECRETS_KEY for
 * this purpose only): some carry a secret shown once (a new agent's token, a webhook's signing
 * secret), and sealing every body means no route can forget to declare one. Headers (ETag, ...)
 * are kept as they are.
 */
const SEALED = '$sealed';

function seal(key: Buffer, body: unknown): unknown {
  return { [SEALED]: encryptSecret(key, JSON.stringify(body ?? null)) };
}

function unseal(key: Buffer, stored: unknown): unknown {
  if (stored && typeof stored === 'object' && typeof (stored as Record<string, unknown>)[SEALED] === 'string') {
    return JSON.parse(decryptSecret(key, (stored as Record<string, string>)[SEALED])) as unknown;
  }
  return stored; // a row written before bodies were sealed
}

/** Rows older than the window (by the database's clock, which stamped them). */
const expired = lt(idempotencyKeys.createdAt, sql`now() - make_interval(secs => ${IDEMPOTENCY_WINDOW_MS / 1000})`);

const pk = (s: IdempotencyScope) =>
  and(eq(idempotencyKeys.userId, s.userId), eq(idempotencyKeys.route, s.route), eq(idempotencyKeys.key, s.key));

/**
 * Claims the key inside the transaction that will create the object. Returns null when this
 * request is the first (go on, then `saveResponse`), or the stored response to replay.
 * A concurrent request with the same key blocks on the primary key until the first commits,
 * then replays it; if the first rolls back, the second proceeds. So one key never creates two objects.
 */
export async function claimKey(tx: Executor, scope: IdempotencyScope, hash: string, sealKey: Buffer): Promise<StoredResponse | null> {
  await tx.delete(idempotencyKeys).where(and(pk(scope), expired));
  const inserted = await tx
    .insert(idempotencyKeys)
    .values({ ...scope, requestHash: hash })
    .onConflictDoNothing()
    .returning({ key: idempotencyKeys.key });
  if (inserted.length) return null;
  const [row] = await tx.select().from(idempotencyKeys).where(pk(scope));
  if (!row || row.statusCode === null) {
    // Only possible if the row vanished between the two statements; the client may simply retry.
    throw new AppError('idempotency_conflict', 'A request with this Idempotency-Key is still in progress; retry shortly.');
  }
  if (row.requestHash !== hash) {
    throw new AppError('idempotency_conflict', 'This Idempotency-Key was used with a different request body.');
  }
  return { status: row.statusCode, body: unseal(sealKey, row.responseBody), headers: (row.responseHeaders ?? {}) as Record<string, string> };
}

export async function saveResponse(tx: Executor, scope: IdempotencyScope, response: StoredResponse, sealKey: Buffer): Promise<void> {
  await tx
    .update(idempotencyKeys)
    .set({ statusCode: response.status, responseBody: seal(sealKey, response.body), responseHeaders: response.headers })
    .where(pk(scope));
}

/** Housekeeping for the worker: forget keys past the window. */
export async function purgeExpiredKeys(db: Executor): Promise<number> {
  const rows = await db
    .delete(idempotencyKeys)
    .where(expired)
    .returning({ key: idempotencyKeys.key });
  return rows.length;
}
