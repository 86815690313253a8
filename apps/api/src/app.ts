import express, { type Express } from 'express';
import cookieParser from 'cookie-parser';
import type { Deps } from '@teamchat/core';
import { webhookQueuesFor } from '@teamchat/delivery';
import { authenticateFor } from './http/authenticate';
import { errorHandler, notFoundHandler } from './http/error-handler';
import { confirmBeforeAnswering } from './http/remembered-auth';
import { meterReads } from './http/limits';
import type { Host } from './http/locals';
import { httpMetrics } from './http/metrics';
import { requestContext } from './http/request-id';
import { buildRouters } from './routes';
import { webAppRouter, webSecurityHeaders } from './http/web-app';
import { refuseMalformedRequests, verifyUtf8Body } from './http/well-formed';

/** Request bodies above this (after decompression) answer 400 invalid_request, reason body_too_large (docs/api.md "Hostile input"). */
export const BODY_LIMIT = '1mb';

/**
 * Builds the app for one host. Both hosts serve the same router tree; only the authentication
 * policy differs (API host: keys and agent tokens; web host: sessions with CSRF).
 */
export function createApp(deps: Deps, host: Host): Express {
  const app = express();
  app.set('deps', deps);
  // The webhook queues the routes add to (tests, replays, enabling's wake-up) are made now,
  // while Redis answers: a queue first used while Redis is away would wait for it (queues.ts).
  webhookQueuesFor(deps);
  app.set('public host', host);
  if (deps.config.trustProxy) {
    // TRUST_PROXY: exactly one reverse proxy in front, so req.ip is the address it appended
    // last to X-Forwarded-For (earlier entries are the client's own claims and never trusted).
    app.set('trust proxy', 1);
  } else {
    app.set('trust proxy', false);
    // With trust proxy off req.ip is the socket's address; Express would derive it through
    // proxy-addr on every read, and express-rate-limit reads it on every request.
    Object.defineProperty(app.request, 'ip', { configurable: true, enumerable: true, get(this: express.Request) { return this.socket?.remoteAddress; } });
  }
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', 'simple');
  meterReads(app);

  // Every route comes from its declaration (packages/contract), in three stages.
  const routers = buildRouters(host);
  app.use(requestContext(host));
  app.use(httpMetrics);
  app.use(refuseMalformedRequests);
  // Unauthenticated, before the body parser: the probes, the reference, and on the web host the
  // local driver's signed upload URL (the bytes stream to storage; the URL is the permission).
  app.use(routers.probes);
  app.use(express.json({ limit: BODY_LIMIT, type: ['application/json', 'application/*+json'], verify: verifyUtf8Body }));

  if (host === 'web') {
    // The web app (static files, and index.html for a browser's navigation) needs no session.
    app.use(webSecurityHeaders(deps.config));
    app.use(webAppRouter());
    // Only the web host authenticates by cookie; the API host parses them only to refuse a
    // browser session that sent no bearer (authenticate.ts), not on every request.
    app.use(cookieParser());
  }
  app.use(routers.auth); // web: sign-in, sign-out; API host: /auth/* names the web host

  app.use(authenticateFor(host));
  app.use(routers.accounts);

  app.use(notFoundHandler);
  app.use(confirmBeforeAnswering);
  app.use(errorHandler);
  return app;
}
