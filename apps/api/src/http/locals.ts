import type { Request, Response } from 'express';
import type { Actor, Logger, Principal } from '@teamchat/core';
import type { AccountMembership, AccountRow, Deps, ReadMeter, RememberedAuthentication, SessionAuth, UnitUsage } from '@teamchat/core';
import type { RateLimitInfo } from 'express-rate-limit';

export type Host = 'api' | 'web';

/** Per-request state, kept on res.locals under typed names. */
export interface RequestLocals {
  requestId: string;
  log: Logger;
  host: Host;
  principal?: Principal;
  session?: SessionAuth;
  /** the caller's seat in the account of the path, read with the credential (accountContext uses it) */
  membership?: AccountMembership;
  /** a request whose authentication may come from memory and be remembered, and its route's scope (remembered-auth.ts) */
  rememberable?: { secretHash: string; accountId: string; scope: string };
  /** set while the request's authentication came from memory and is not yet confirmed (remembered-auth.ts) */
  unconfirmed?: RememberedAuthentication;
  account?: AccountRow;
  actor?: Actor;
  /** what this request spent of the seat's limits (set by enforceLimits) */
  limits?: {
    minute?: RateLimitInfo;
    units?: UnitUsage;
    /** Redis was away: units not charged, the minute counted in process */
    degraded?: boolean;
    /** a read being metered until res.end (meterReads in limits.ts) */
    read?: { meter: ReadMeter; reserved: UnitUsage; deps: Deps };
  };
  valid: { params: Record<string, any>; query: Record<string, any>; body: any; headers: Record<string, any> };
}

export function locals(res: Response): RequestLocals {
  return res.locals as RequestLocals;
}

export function depsOf(req: Request): Deps {
  return req.app.get('deps') as Deps;
}

/** The actor, set by the account middleware on every route under /accounts/{id}. */
export function actorOf(res: Response): Actor {
  const actor = locals(res).actor;
  if (!actor) throw new Error('actor missing: route mounted outside the account router');
  return actor;
}
