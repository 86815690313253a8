import type { Request, Response } from 'express';
import Joi from 'joi';
import { ACCOUNT_PREFIX, expressPath } from '@teamchat/contract';
import { AppError, claimKey, deriveKey, requestHash, saveResponse, type Actor, type Deps } from '@teamchat/core';
import type { Executor, Tx } from '@teamchat/db';
import { actorOf, depsOf, locals } from './locals';

export interface CreateResult {
  status: number;
  body: unknown;
  /** what the idempotency record keeps and a replay answers, when it must differ from `body` (a secret shown once is not stored) */
  storedBody?: unknown;
  headers?: Record<string, string>;
  /** work to do only once the transaction has committed (enqueue a job, ...) */
  afterCommit?: () => Promise<void>;
  /**
   * Fields of `body` holding a secret shown once (a new agent's token): a replay returns them
   * only to the very credential or session that made the first request. Every credential of a
   * person shares the key's scope and a replay runs no checks, so another of them (a narrower
   * key, an agent) must not receive a credential it could not have minted.
   */
  secretFields?: readonly string[];
}

/** Inside the sealed stored body: who made the first request, and which fields only they get back. */
const OWNER = '$principal';
const SECRETS = '$secret_fields';

function storedForm(out: CreateResult, principalId: string): unknown {
  const body = out.storedBody ?? out.body;
  if (!out.secretFields?.length || !body || typeof body !== 'object') return body;
  return { ...(body as Record<string, unknown>), [OWNER]: principalId, [SECRETS]: out.secretFields };
}

/** The stored body as this caller may see it: another credential's secret fields left out. */
function replayedForm(stored: unknown, principalId: string): unknown {
  if (!stored || typeof stored !== 'object' || !(OWNER in stored)) return stored;
  const { [OWNER]: owner, [SECRETS]: fields, ...body } = stored as Record<string, unknown>;
  if (owner !== principalId) for (const f of (fields as string[]) ?? []) delete body[f];
  return body;
}

export interface CreateContext {
  tx: Tx;
  deps: Deps;
  actor: Actor;
  body: any;
  params: Record<string, any>;
  req: Request;
}

/**
 * An Idempotency-Key is a UUID in its canonical form only (8-4-4-4-12 hex digits, any letter
 * case, stored lower-cased): Joi's `guid()` also takes braces and other spellings, which would
 * make one UUID several keys.
 */
const uuid = Joi.string().pattern(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i);

/** Where every creating route is mounted: it needs the account's actor (routes/index.ts). */
const ACCOUNT_MOUNT = expressPath(ACCOUNT_PREFIX);

/**
 * The route an Idempotency-Key is scoped to (spec: Limits rule 4): the matched route's pattern
 * with each parameter's decoded value, e.g. `POST /accounts/acct_x/channels/ch_1/messages`.
 * Express routes another letter case, a trailing slash or a percent-encoded character to the
 * same handler, so the raw path would make one route several scopes (and one key two objects).
 * A value is the validated one the use case acts on, else the one Express decoded. A path spelt
 * as documented gives the very string the raw path gave, so keys already stored still replay.
 */
function idempotencyRoute(req: Request, params: Record<string, unknown>): string {
  const routePath = String((req.route as { path: string }).path);
  const pattern = routePath === '/' ? ACCOUNT_MOUNT : `${ACCOUNT_MOUNT}${routePath}`;
  return `POST ${pattern.replace(/:(\w+)/g, (_, name: string) => encodeURIComponent(String(params[name] ?? req.params[name])))}`;
}

/** The key stored responses are sealed with (one HMAC: cheaper than the insert it guards). */
const sealKeyOf = (deps: Deps): Buffer => deriveKey(deps.config.secretsKey, 'idempotency-response');

/** The context of a use case that is atomic on its own (see `creatingAtomic`). */
export interface AtomicCreateContext extends Omit<CreateContext, 'tx'> {
  /** the database, or the transaction that also holds the Idempotency-Key record */
  db: Executor;
}

/**
 * A creating POST: runs the use case in one transaction together with its Idempotency-Key
 * record (spec: Limits rule 4). A replay answers the stored status and body with
 * `Idempotent-Replayed: true`; the same key with another body answers 409. The stored body is
 * sealed (AES-GCM), since some carry a secret shown once.
 */
export function creating(useCase: (ctx: CreateContext) => Promise<CreateResult>) {
  return marked(handler(useCase));
}

/**
 * A creating POST whose use case is atomic on its own (its writes are one statement, e.g. a
 * message post): without an Idempotency-Key it runs on the pool with no BEGIN/COMMIT (docs/performance.md, 'The post path');
 * with one it runs in a transaction with the key's record, exactly as `creating`.
 */
export function creatingAtomic(useCase: (ctx: AtomicCreateContext) => Promise<CreateResult>) {
  return marked(handler(({ tx, ...rest }) => useCase({ ...rest, db: tx }), useCase));
}

/** Handlers built by `creating`/`creatingAtomic`: the router builder checks a route declared creating has one. */
const creatingHandlers = new WeakSet<object>();
function marked<H extends object>(h: H): H {
  creatingHandlers.add(h);
  return h;
}
export const isCreatingHandler = (h: unknown): boolean => typeof h === 'function' && creatingHandlers.has(h);

/**
 * Sends a created object's answer: what `res.status(status).json(body)` sends (the app sets no
 * json replacer, spaces or escape, and ETags are off), without Express's per-call work (its
 * setting lookups, mime and charset parsing of Content-Type, freshness check), which the post's
 * profile showed on every create (docs/performance.md, 'The post path').
 */
function sendCreated(res: Response, status: number, body: unknown): void {
  const json = JSON.stringify(body) as string | undefined;
  if (json === undefined || status === 204 || status === 304) {
    res.status(status).json(body); // no body to send: Express's own rules
    return;
  }
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(json));
  res.end(json);
}

/** `withoutKey`: how to run the use case when no Idempotency-Key is sent, if not in a transaction. */
function handler(useCase: (ctx: CreateContext) => Promise<CreateResult>, withoutKey?: (ctx: AtomicCreateContext) => Promise<CreateResult>) {
  return async (req: Request, res: Response): Promise<void> => {
    const deps = depsOf(req);
    const actor = actorOf(res);
    const valid = locals(res).valid;
    const key = req.get('idempotency-key');
    if (key !== undefined && uuid.validate(key).error) {
      throw new AppError('invalid_request', 'Idempotency-Key must be a UUID.', { field: 'Idempotency-Key' });
    }
    if (key === undefined && withoutKey) {
      const out = await withoutKey({ db: deps.database.db, deps, actor, body: valid.body, params: valid.params, req });
      if (out.afterCommit) await out.afterCommit().catch((err: Error) => locals(res).log.warn('after-commit step failed', { error: err.message }));
      if (out.headers) for (const name in out.headers) res.setHeader(name, out.headers[name]);
      sendCreated(res, out.status, out.body);
      return;
    }
    const scope = key ? { userId: actor.userId, route: idempotencyRoute(req, valid.params), key: key.toLowerCase() } : null;
    let replayed = false;
    const result = await deps.database.db.transaction(async (tx) => {
      if (scope) {
        const stored = await claimKey(tx, scope, requestHash(req.body ?? {}), sealKeyOf(deps));
        if (stored) {
          replayed = true;
          return { status: stored.status, body: replayedForm(stored.body, actor.principal.id), headers: stored.headers } as CreateResult;
        }
      }
      const out = await useCase({ tx, deps, actor, body: valid.body, params: valid.params, req });
      if (scope) await saveResponse(tx, scope, { status: out.status, body: storedForm(out, actor.principal.id), headers: out.headers ?? {} }, sealKeyOf(deps));
      return out;
    });
    if (!replayed && result.afterCommit) {
      await result.afterCommit().catch((err: Error) => locals(res).log.warn('after-commit step failed', { error: err.message }));
    }
    for (const [name, value] of Object.entries(result.headers ?? {})) res.setHeader(name, value);
    if (replayed) res.setHeader('Idempotent-Replayed', 'true');
    sendCreated(res, result.status, result.body);
  };
}
