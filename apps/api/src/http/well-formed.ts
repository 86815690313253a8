import http, { type RequestListener, type Server } from 'node:http';
import { isUtf8 } from 'node:buffer';
import type { NextFunction, Request, Response } from 'express';
import { AppError, type Logger } from '@teamchat/core';
import { answerClientErrors } from './client-errors';

/**
 * What makes a request well formed before any route looks at it (docs/api.md "Hostile input").
 * Each refusal is the spec's `400 invalid_request` through the one error handler, with an
 * X-Request-Id like every answer, and costs the caller nothing (it comes before authentication).
 */

/**
 * The HTTP server of a public host. Node itself answers an HTTP/1.1 request without a Host
 * header with a bare 400 (no body, no X-Request-Id); here the app answers it
 * (`refuseMalformedRequests`), and what Node's parser refuses is answered too (answerClientErrors).
 */
export function createHostServer(app: RequestListener, logger: Logger): Server {
  const server = http.createServer({ requireHostHeader: false }, app);
  answerClientErrors(server, logger);
  return server;
}

/** A `%` not followed by two hex digits is a literal percent sign (as the query parser reads it), not an encoding. */
const LONE_PERCENT = /%(?![0-9A-Fa-f]{2})/g;

/** Whether the query's percent-encodings spell UTF-8: `%ED%A0%80` (a lone surrogate) or `%FF` would be read as U+FFFD, silently changed. */
function queryIsUtf8(url: string): boolean {
  const at = url.indexOf('?');
  if (at < 0 || !url.includes('%', at)) return true;
  try {
    decodeURIComponent(url.slice(at + 1).replace(LONE_PERCENT, '%25'));
    return true;
  } catch {
    return false;
  }
}

/**
 * Refuses, before routing and authentication:
 * - an HTTP/1.1 request without a Host header (HTTP/1.1 requires one: RFC 9112, section 3.2);
 * - `OPTIONS`: no route answers it (the API serves no CORS), so it is `404 not_found` like any
 *   method a path does not have, not Express's automatic `200 text/plain` list of methods;
 * - a query whose percent-encodings are not UTF-8 (`field: "query"`), as the path's are refused.
 */
export function refuseMalformedRequests(req: Request, _res: Response, next: NextFunction): void {
  if (req.httpVersion === '1.1' && req.headers.host === undefined) {
    next(new AppError('invalid_request', 'An HTTP/1.1 request must carry a Host header.', { field: 'headers.host', reason: 'malformed_request' }));
  } else if (req.method === 'OPTIONS') {
    next(new AppError('not_found', 'No such endpoint.'));
  } else if (!queryIsUtf8(req.url)) {
    next(new AppError('invalid_request', 'The query string holds a percent-encoding that is not UTF-8.', { field: 'query' }));
  } else {
    next();
  }
}

/** body-parser's `verify`: a JSON body must be UTF-8 (RFC 8259, section 8.1); other bytes would be stored as U+FFFD, silently changed. */
export function verifyUtf8Body(_req: unknown, _res: unknown, body: Buffer): void {
  if (!isUtf8(body)) throw Object.assign(new Error('The request body is not valid UTF-8.'), { type: NOT_UTF8 });
}
export const NOT_UTF8 = 'entity.encoding.not_utf8';
