import type { Express, NextFunction, Request, RequestHandler, Response } from 'express';
import { rateLimit, type ClientRateLimitInfo, type RateLimitInfo, type Store } from 'express-rate-limit';
import {
  MINUTE_WINDOW_MS, ReadMeter, budgetExceeded, chargeCall, chargeReadTail, chargeUnits, minuteKey, rateLimited, readCost,
  redisAvailability, seatOf, type CallCharge, type ChargeResult, type Deps, type Plan, type UnitUsage,
} from '@teamchat/core';
import { actorOf, depsOf, locals, type RequestLocals } from './locals';

/**
 * Fair use on every route under /accounts/{accountId} (spec: Limits), after the account context.
 * The rules live in packages/core/src/limits; this is the Express glue:
 *
 * 1. Calls per minute per seat: express-rate-limit, whose store runs core's `chargeCall` — ONE
 *    Redis script that counts the call in the seat's minute and, if the minute allows it, charges
 *    (checked) its first call unit. Over the minute: 429 rate_limited, `scope: "seat_per_minute"`,
 *    Retry-After. IETF RateLimit-Policy / RateLimit (draft-8) on every response that gets this far.
 * 2. Daily call units: spent → 429 budget_exceeded with `budget` and Retry-After. A read's cost
 *    beyond the first unit is charged, unchecked, when its body reaches res.end (core ReadMeter).
 *
 * Both are skipped when config.limitsEnabled is false (benchmarks). While Redis is away the
 * minute is counted in this process and units are not charged (docs/limits.md).
 */

const READ_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** What this request spent, for GET /accounts/{id} and the X-Call-Units-* headers. */
export type LimitsInfo = NonNullable<RequestLocals['limits']>;

export function limitsOf(res: Response): LimitsInfo | undefined {
  return locals(res).limits;
}

/**
 * The limiter's key: the seat (`<accountId>:<userId>`, spec: Limits rule 1) and, after `@`, the
 * account's plan, which the store needs for both limits.
 */
function limiterKey(res: Response): string {
  const actor = actorOf(res);
  return `${actor.accountId}:${actor.userId}@${locals(res).account!.plan}`;
}

/**
 * express-rate-limit's store: each increment is one `chargeCall`. The call's unit outcome is
 * handed to the request through `results`, keyed by what express-rate-limit puts on
 * req.rateLimit (key, count, window end): the count is unique per call of a seat in a window
 * (the script's HINCRBY, or the in-process window), so concurrent calls never mix their outcomes.
 */
class SeatCallStore implements Store {
  readonly localKeys = false;
  readonly prefix: string;
  private readonly results = new Map<string, CallCharge>();

  constructor(private readonly deps: Deps) {
    this.prefix = `${deps.config.redisPrefix}:limits:minute-window:`;
  }

  private static resultKey(key: string, used: number, resetMs: number): string {
    return `${key}|${used}|${resetMs}`;
  }

  async increment(key: string): Promise<ClientRateLimitInfo> {
    const at = key.lastIndexOf('@');
    const seat = key.slice(0, at);
    const plan = key.slice(at + 1) as Plan;
    const colon = seat.indexOf(':');
    const charge = await chargeCall({
      seat: seatOf(this.deps, seat.slice(0, colon), plan, seat.slice(colon + 1)),
      callsPerMinute: this.deps.config.planLimits[plan].callsPerMinute,
      log: this.deps.logger,
    });
    // A result never taken (an exception inside express-rate-limit) must not pile up.
    if (this.results.size > 10_000) this.results.clear();
    this.results.set(SeatCallStore.resultKey(key, charge.minute.used, charge.minute.resetAt.getTime()), charge);
    return { totalHits: charge.minute.used, resetTime: charge.minute.resetAt };
  }

  /** The charge of the call express-rate-limit just counted (and forgets it). */
  take(info: RateLimitInfo | undefined): CallCharge | undefined {
    if (!info?.resetTime) return undefined;
    const k = SeatCallStore.resultKey(info.key, info.used, info.resetTime.getTime());
    const charge = this.results.get(k);
    this.results.delete(k);
    return charge;
  }

  async decrement(): Promise<void> {
    // Only used with skipFailedRequests / skipSuccessfulRequests, which this limiter does not set.
  }

  async resetKey(key: string): Promise<void> {
    const seat = key.slice(0, key.lastIndexOf('@'));
    const colon = seat.indexOf(':');
    await this.deps.redis.del(minuteKey(this.deps.config, seat.slice(0, colon), seat.slice(colon + 1)));
  }
}

interface Limiter {
  middleware: RequestHandler;
  store: SeatCallStore;
}

function buildLimiter(deps: Deps): Limiter {
  const store = new SeatCallStore(deps);
  const middleware = rateLimit({
    windowMs: MINUTE_WINDOW_MS,
    limit: (_req, res) => deps.config.planLimits[locals(res).account!.plan as Plan].callsPerMinute,
    keyGenerator: (_req, res) => limiterKey(res),
    standardHeaders: 'draft-8',
    legacyHeaders: false,
    store,
    // Its checks guard against misconfigurations (several increments per request, a limiter
    // built inside a handler — ours is, lazily, on purpose: limiterFor); tests cover ours, so
    // they are not run on every request.
    validate: false,
    handler: (req, _res, next) => {
      const info = (req as Request & { rateLimit: RateLimitInfo }).rateLimit;
      const seconds = info.resetTime ? (info.resetTime.getTime() - deps.now().getTime()) / 1000 : MINUTE_WINDOW_MS / 1000;
      next(rateLimited({
        scope: 'seat_per_minute',
        limit: info.limit,
        retryAfterS: Math.min(MINUTE_WINDOW_MS / 1000, seconds),
        message: (s) => `This seat made more than ${info.limit} calls in a minute; retry after ${s} s.`,
      }));
    },
  });
  return { middleware, store };
}

/** One limiter (and one store) per deps set, shared by both hosts' apps of a process. */
const limiters = new WeakMap<Deps, Limiter>();
function limiterFor(deps: Deps): Limiter {
  let limiter = limiters.get(deps);
  if (!limiter) {
    limiter = buildLimiter(deps);
    limiters.set(deps, limiter);
  }
  return limiter;
}

function setUnitHeaders(res: Response, cost: number, u: UnitUsage): void {
  if (res.headersSent) return;
  res.setHeader('X-Call-Units-Cost', String(cost));
  res.setHeader('X-Call-Units-Remaining', String(u.remaining));
}

/**
 * Installs the read meter on an app, once: res.write/res.end on the app's response prototype
 * (Express's app.response) feed a metered read's body to its ReadMeter and, at res.end, charge
 * its tail (if any) before the response leaves. Patching each response object instead would turn
 * it into a slow dictionary-mode object for the rest of its request.
 */
export function meterReads(app: Express): void {
  const proto = app.response as Response;
  const write = proto.write as (...a: unknown[]) => boolean;
  const end = proto.end as (...a: unknown[]) => Response;
  proto.write = function meteredWrite(this: Response, ...args: unknown[]) {
    (this.locals as RequestLocals).limits?.read?.meter.add(args[0], args[1]);
    return write.apply(this, args);
  } as Response['write'];
  proto.end = function meteredEnd(this: Response, ...args: unknown[]) {
    const l = this.locals as RequestLocals;
    const read = l.limits?.read;
    if (!read) return end.apply(this, args);
    l.limits!.read = undefined;
    if (typeof args[0] !== 'function') read.meter.add(args[0], args[1]);
    const tail = read.meter.tail();
    if (tail === 0) {
      setUnitHeaders(this, 1, read.reserved);
      return end.apply(this, args);
    }
    const account = l.account!;
    // chargeReadTail never rejects (Redis away: not charged, logged as degraded).
    void chargeReadTail(seatOf(read.deps, account.id, account.plan as Plan, l.actor!.userId), tail, l.log)
      .then((u) => {
        if (!u) return;
        l.limits!.units = u;
        setUnitHeaders(this, tail + 1, u);
      })
      .finally(() => end.apply(this, args));
    return this;
  } as Response['end'];
}

/** Per-seat rate limit and daily call units; runs after the account context on every account route. */
export function enforceLimits(req: Request, res: Response, next: NextFunction): void {
  const deps = depsOf(req);
  if (!deps.config.limitsEnabled) {
    next();
    return;
  }
  const limiter = limiterFor(deps);
  const l = locals(res);
  void limiter.middleware(req, res, (err?: unknown) => {
    const info = (req as Request & { rateLimit?: RateLimitInfo }).rateLimit;
    const charge = limiter.store.take(info);
    l.limits = { minute: info, units: charge?.units ?? undefined, degraded: charge?.degraded ?? false };
    if (err) {
      next(err);
      return;
    }
    const units = charge?.units;
    if (!units) {
      // Redis away: the call goes through uncharged and unchecked (docs/limits.md).
      next();
      return;
    }
    if (!units.allowed) {
      next(budgetExceeded(units, deps.now()));
      return;
    }
    if (READ_METHODS.has(req.method)) l.limits.read = { meter: new ReadMeter(), reserved: units, deps };
    else setUnitHeaders(res, 1, units);
    next();
  });
}

/**
 * Charges a read whose body size is known before its first byte (a file download: the size in
 * the file's row). Same rule as every read (readCost: 1 unit per 16 KB, minimum 1), but its
 * whole cost is checked up front, so a spent budget answers 429 budget_exceeded before a byte is
 * sent instead of metering a stream as it goes; the meter is switched off, so nothing is charged
 * twice. The first unit was reserved with the call (enforceLimits); the rest is checked here.
 * Limits off, or Redis away (at the call or now): not charged, as any read (docs/limits.md).
 */
export async function chargeKnownRead(res: Response, bytes: number): Promise<void> {
  const l = locals(res);
  const read = l.limits?.read;
  if (!read) return;
  l.limits!.read = undefined;
  const rest = readCost(bytes) - 1;
  if (rest === 0) {
    setUnitHeaders(res, 1, read.reserved);
    return;
  }
  const account = l.account!;
  const seat = seatOf(read.deps, account.id, account.plan as Plan, l.actor!.userId);
  const charge: ChargeResult | null = await redisAvailability(seat.redis).inRedisElse('units_not_charged', l.log, seat.now.getTime(),
    () => chargeUnits({ ...seat, units: rest }), () => null);
  if (!charge) return;
  if (!charge.allowed) throw budgetExceeded(charge, seat.now);
  l.limits!.units = charge;
  setUnitHeaders(res, rest + 1, charge);
}
