import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { rateLimit, type ClientRateLimitInfo, type Options, type RateLimitInfo, type Store } from 'express-rate-limit';
import { RedisStore, type RedisReply } from 'rate-limit-redis';
import {
  AppError, LocalWindowCounter, budgetExceeded, chargeUnits, readCost, redisAvailability, seatOf,
  type Deps, type Plan, type UnitUsage,
} from '@teamchat/core';
import { actorOf, depsOf, locals, type RequestLocals } from './locals';

/**
 * Fair use on every route under /accounts/{accountId} (spec: Limits), after the account context:
 *
 * 1. Calls per minute per seat: express-rate-limit with its Redis store (shared by every API
 *    process), keyed by seat, the limit from the account's plan. Over it: 429 rate_limited,
 *    `scope: "seat_per_minute"`, Retry-After. IETF RateLimit-Policy / RateLimit (draft-8) on
 *    every response that gets this far.
 * 2. Daily call units (packages/core limits): a write costs 1, charged before the handler with
 *    an atomic check. A read costs 1 per 16 KB of body, minimum 1, but its size is known only
 *    once the body is built, so 1 unit is reserved (checked atomically) before the handler and
 *    the rest is charged, unchecked, when the body reaches res.end, before the response goes out.
 *    Spent: 429 budget_exceeded with `budget` and Retry-After.
 *
 * Both are skipped when config.limitsEnabled is false (benchmarks).
 *
 * While Redis is away (docs/limits.md "When Redis is away") the minute is counted in this process
 * and units are neither checked nor charged; each such decision is counted and logged at most
 * once per interval (core limits/availability). Redis is used again as soon as it answers.
 */

const WINDOW_MS = 60_000;
const READ_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** What this request spent, for GET /accounts/{id} and the X-Call-Units-* headers. */
export type LimitsInfo = NonNullable<RequestLocals['limits']>;

export function limitsOf(res: Response): LimitsInfo | undefined {
  return locals(res).limits;
}

function plan(res: Response): Plan {
  return locals(res).account!.plan as Plan;
}

/** The seat's key: a person in an account (the same person in two accounts has two seats). */
function seatKey(res: Response): string {
  const actor = actorOf(res);
  return `${actor.accountId}:${actor.userId}`;
}

/**
 * The Redis store, or while Redis is away an in-process window per seat (each API process then
 * allows the full limit on its own).
 */
class DegradableStore implements Store {
  private readonly local = new LocalWindowCounter(WINDOW_MS);
  constructor(private readonly deps: Deps, private readonly redisStore: RedisStore) {}

  get prefix(): string {
    return this.redisStore.prefix;
  }

  init(options: Options): void {
    this.redisStore.init(options);
  }

  async increment(key: string): Promise<ClientRateLimitInfo> {
    const availability = redisAvailability(this.deps.redis);
    let error: unknown;
    if (availability.usable()) {
      try {
        return await this.redisStore.increment(key);
      } catch (err) {
        error = err;
        availability.failed();
      }
    }
    const now = this.deps.now().getTime();
    availability.degraded('minute_limit_local', this.deps.logger, now, error);
    const w = this.local.hit(key, now);
    return { totalHits: w.count, resetTime: new Date(w.resetAt) };
  }

  async decrement(key: string): Promise<void> {
    await this.redisStore.decrement(key).catch(() => undefined);
  }

  async resetKey(key: string): Promise<void> {
    this.local.reset(key);
    await this.redisStore.resetKey(key).catch(() => undefined);
  }
}

function buildMinuteLimiter(deps: Deps): RequestHandler {
  const redisStore = new RedisStore({
    sendCommand: (command: string, ...args: string[]) => deps.redis.call(command, ...args) as Promise<RedisReply>,
    prefix: `${deps.config.redisPrefix}:limits:minute:`,
  });
  // The store starts loading its scripts at construction and awaits them only on use; a
  // failure there (Redis away) is retried on use, so it must not surface as an unhandled rejection.
  const pending = redisStore as unknown as { incrementScriptSha?: Promise<string>; getScriptSha?: Promise<string> };
  pending.incrementScriptSha?.catch(() => undefined);
  pending.getScriptSha?.catch(() => undefined);

  return rateLimit({
    windowMs: WINDOW_MS,
    limit: (_req, res) => deps.config.planLimits[plan(res)].callsPerMinute,
    keyGenerator: (_req, res) => seatKey(res),
    standardHeaders: 'draft-8',
    legacyHeaders: false,
    store: new DegradableStore(deps, redisStore),
    // Built on the first request of each deps set (buildRouter has no deps), see limiterFor.
    validate: { creationStack: false },
    handler: (req, _res, next) => {
      const info = (req as Request & { rateLimit: RateLimitInfo }).rateLimit;
      const seconds = info.resetTime ? Math.ceil((info.resetTime.getTime() - Date.now()) / 1000) : WINDOW_MS / 1000;
      const retryAfter = Math.min(WINDOW_MS / 1000, Math.max(1, seconds));
      next(new AppError(
        'rate_limited',
        `This seat made more than ${info.limit} calls in a minute; retry after ${retryAfter} s.`,
        { scope: 'seat_per_minute', limit: info.limit, retry_after: retryAfter },
        { 'Retry-After': String(retryAfter) },
      ));
    },
  });
}

/**
 * One limiter (and one Redis store) per deps set, shared by both hosts' apps of a process.
 * Built lazily: routes are assembled without deps, and the producer Redis connection must be
 * ready before the store loads its scripts.
 */
const limiters = new WeakMap<Deps, RequestHandler>();
function limiterFor(deps: Deps): RequestHandler {
  let limiter = limiters.get(deps);
  if (!limiter) {
    limiter = buildMinuteLimiter(deps);
    limiters.set(deps, limiter);
  }
  return limiter;
}

function byteLength(chunk: unknown, encoding?: unknown): number {
  if (typeof chunk === 'string') return Buffer.byteLength(chunk, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8');
  if (chunk instanceof Uint8Array) return chunk.byteLength;
  return 0;
}

function setUnitHeaders(res: Response, cost: number, u: UnitUsage): void {
  if (res.headersSent) return;
  res.setHeader('X-Call-Units-Cost', String(cost));
  res.setHeader('X-Call-Units-Remaining', String(u.remaining));
}

/**
 * Counts the body's bytes as it is written; at res.end charges the read's cost beyond the
 * reserved unit, then ends the response. Charging before the response leaves means a client
 * that has its answer also sees its cost in the counter (and the X-Call-Units-* headers).
 */
function chargeReadAtEnd(req: Request, res: Response, reserved: UnitUsage): void {
  const deps = depsOf(req);
  let bytes = 0;
  const write = res.write;
  const end = res.end;
  res.write = function (this: Response, chunk: unknown, ...rest: unknown[]) {
    bytes += byteLength(chunk, rest[0]);
    return (write as (...a: unknown[]) => boolean).call(this, chunk, ...rest);
  } as Response['write'];
  res.end = function (this: Response, ...args: unknown[]) {
    res.end = end;
    const [chunk, encoding] = args;
    if (typeof chunk !== 'function') bytes += byteLength(chunk, encoding);
    const cost = readCost(bytes);
    const finish = () => (end as (...a: unknown[]) => Response).apply(res, args);
    if (cost === 1) {
      setUnitHeaders(res, 1, reserved);
      return finish();
    }
    const account = locals(res).account!;
    const availability = redisAvailability(deps.redis);
    if (!availability.usable()) {
      availability.degraded('units_not_charged', locals(res).log, deps.now().getTime());
      return finish();
    }
    chargeUnits({ ...seatOf(deps, account.id, account.plan as Plan, actorOf(res).userId), units: cost - 1, check: false })
      .then((u) => {
        locals(res).limits!.units = u;
        setUnitHeaders(res, cost, u);
      })
      .catch((err: Error) => {
        availability.failed();
        availability.degraded('units_not_charged', locals(res).log, deps.now().getTime(), err);
      })
      .finally(finish);
    return res;
  } as Response['end'];
}

async function spendUnits(req: Request, res: Response): Promise<void> {
  const deps = depsOf(req);
  const l = locals(res);
  const account = l.account!;
  const now = deps.now();
  const availability = redisAvailability(deps.redis);
  let charged;
  let error: unknown;
  if (availability.usable()) {
    try {
      charged = await chargeUnits({ ...seatOf(deps, account.id, account.plan as Plan, actorOf(res).userId), now, units: 1 });
    } catch (err) {
      error = err;
      availability.failed();
    }
  }
  if (!charged) {
    // Redis away: the call goes through uncharged and unchecked (docs/limits.md).
    availability.degraded('units_not_charged', l.log, now.getTime(), error);
    l.limits!.degraded = true;
    return;
  }
  if (!charged.allowed) throw budgetExceeded(charged, now);
  locals(res).limits!.units = charged;
  if (READ_METHODS.has(req.method)) chargeReadAtEnd(req, res, charged);
  else setUnitHeaders(res, 1, charged);
}

/** Per-seat rate limit and daily call units; runs after the account context on every account route. */
export function enforceLimits(req: Request, res: Response, next: NextFunction): void {
  const deps = depsOf(req);
  if (!deps.config.limitsEnabled) {
    next();
    return;
  }
  locals(res).limits = { degraded: false };
  void limiterFor(deps)(req, res, (err?: unknown) => {
    if (err) {
      next(err);
      return;
    }
    locals(res).limits!.minute = (req as Request & { rateLimit?: RateLimitInfo }).rateLimit;
    spendUnits(req, res).then(() => next(), next);
  });
}
