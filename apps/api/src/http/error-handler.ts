import type { NextFunction, Request, Response } from 'express';
import { AppError, databaseTimeoutError, databaseUnavailableError, isDatabaseTimeout, isDatabaseUnavailable, isUniqueViolation, uniqueViolationError } from '@teamchat/core';
import { depsOf, locals } from './locals';
import { fromCallerInput } from './input-errors';
import { NOT_UTF8 } from './well-formed';

/** body-parser's error types for malformed and oversize bodies; then other errors only caller input causes. */
function fromBodyParser(err: { type?: string; status?: number; limit?: number }): AppError | null {
  if (err.type === 'entity.parse.failed') return new AppError('invalid_request', 'The request body is not valid JSON.', { field: 'body' });
  if (err.type === NOT_UTF8) return new AppError('invalid_request', 'The request body is not valid UTF-8.', { field: 'body' });
  if (err.type === 'entity.too.large') return new AppError('invalid_request', `The request body is larger than ${err.limit} bytes.`, { field: 'body', reason: 'body_too_large', limit_bytes: err.limit });
  if (err.type && err.status && err.status < 500) return new AppError('invalid_request', 'The request body could not be read.', { field: 'body' });
  return fromCallerInput(err);
}

/** The ONE place an error becomes a response. Anything unknown is 500 internal, never a stack trace. */
export function errorHandler(err: unknown, req: Request, res: Response, _next: NextFunction): void {
  const l = locals(res);
  let appError: AppError | null = null;
  if (err instanceof AppError) appError = err;
  else if (err && typeof err === 'object') appError = fromBodyParser(err as { type?: string; status?: number });
  if (!appError && isUniqueViolation(err)) appError = uniqueViolationError(err);
  if (!appError && isDatabaseTimeout(err)) {
    (l.log ?? depsOf(req).logger).warn('database time bound hit', { request_id: l.requestId, path: req.path });
    appError = databaseTimeoutError(depsOf(req).config.dbStatementTimeoutMs / 1000);
  }
  if (!appError && isDatabaseUnavailable(err)) {
    (l.log ?? depsOf(req).logger).warn('database unavailable', { request_id: l.requestId, path: req.path, error: (err as Error).message });
    appError = databaseUnavailableError();
  }
  if (!appError) {
    (l.log ?? depsOf(req).logger).error('unhandled error', {
      error: err instanceof Error ? { name: err.name, message: err.message, stack: err.stack } : String(err),
      request_id: l.requestId,
    });
    appError = new AppError('internal', 'Something went wrong on our side. Quote the request id if you contact us.');
  }
  const body: Record<string, unknown> = { code: appError.code, message: appError.message, ...appError.extras };
  if (appError.status >= 500) {
    body.request_id = l.requestId;
    body.status_url = `${depsOf(req).config.publicWebUrl}/status`;
  }
  if (appError.status === 429) {
    depsOf(req).metrics.limitRefusalsTotal.inc({ code: appError.code, scope: String(appError.extras.scope ?? 'none') });
  }
  // A failure after the response started (a stream, a late charge) can only be logged.
  if (res.headersSent) return;
  for (const [name, value] of Object.entries(appError.headers)) res.setHeader(name, value);
  res.status(appError.status).json({ error: body });
}

/** Unknown paths answer in the same error shape. */
export function notFoundHandler(_req: Request, _res: Response, next: NextFunction): void {
  next(new AppError('not_found', 'No such endpoint.'));
}
