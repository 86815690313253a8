import type { Request, Response } from 'express';
import Joi from 'joi';
import { AppError, claimKey, deriveKey, requestHash, saveResponse, type Actor, type Deps } from '@teamchat/core';
import type { Tx } from '@teamchat/db';
import { actorOf, depsOf, locals } from './locals';

export interface CreateResult {
  status: number;
  body: unknown;
  /** what the idempotency record keeps and a replay answers, when it must differ from `body` (a secret shown once is not stored) */
  storedBody?: unknown;
  headers?: Record<string, string>;
  /** work to do only once the transaction has committed (enqueue a job, ...) */
  afterCommit?: () => Promise<void>;
}

export interface CreateContext {
  tx: Tx;
  deps: Deps;
  actor: Actor;
  body: any;
  params: Record<string, any>;
  req: Request;
}

const uuid = Joi.string().guid();

/** The key stored responses are sealed with (one HMAC: cheaper than the insert it guards). */
const sealKeyOf = (deps: Deps): Buffer => deriveKey(deps.config.secretsKey, 'idempotency-response');

/**
 * A creating POST: runs the use case in one transaction together with its Idempotency-Key
 * record (spec: Limits rule 4). A replay answers the stored status and body with
 * `Idempotent-Replayed: true`; the same key with another body answers 409. The stored body is
 * sealed (AES-GCM), since some carry a secret shown once.
 */
export function creating(useCase: (ctx: CreateContext) => Promise<CreateResult>) {
  return async (req: Request, res: Response): Promise<void> => {
    const deps = depsOf(req);
    const actor = actorOf(res);
    const valid = locals(res).valid;
    const key = req.get('idempotency-key');
    if (key !== undefined && uuid.validate(key).error) {
      throw new AppError('invalid_request', 'Idempotency-Key must be a UUID.', { field: 'Idempotency-Key' });
    }
    const scope = key ? { userId: actor.userId, route: `POST ${req.baseUrl}${req.path}`, key: key.toLowerCase() } : null;
    let replayed = false;
    const result = await deps.database.db.transaction(async (tx) => {
      if (scope) {
        const stored = await claimKey(tx, scope, requestHash(req.body ?? {}), sealKeyOf(deps));
        if (stored) {
          replayed = true;
          return { status: stored.status, body: stored.body, headers: stored.headers } as CreateResult;
        }
      }
      const out = await useCase({ tx, deps, actor, body: valid.body, params: valid.params, req });
      if (scope) await saveResponse(tx, scope, { status: out.status, body: out.storedBody ?? out.body, headers: out.headers ?? {} }, sealKeyOf(deps));
      return out;
    });
    if (!replayed && result.afterCommit) {
      await result.afterCommit().catch((err: Error) => locals(res).log.warn('after-commit step failed', { error: err.message }));
    }
    for (const [name, value] of Object.entries(result.headers ?? {})) res.setHeader(name, value);
    if (replayed) res.setHeader('Idempotent-Replayed', 'true');
    res.status(result.status).json(result.body);
  };
}
