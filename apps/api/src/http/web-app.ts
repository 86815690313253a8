import fs from 'node:fs';
import path from 'node:path';
import express, { Router, type NextFunction, type Request, type Response } from 'express';

/**
 * The web app's static build (apps/web/dist, `npm run build -w @teamchat/web`), served by the web
 * host at `/` (docs/web.md, "Serving"). Same place relative to this file whether it runs as
 * TypeScript (src/http) or compiled (dist/http).
 */
export const WEB_APP_DIR = path.resolve(__dirname, '../../../web/dist');

/**
 * Headers on every web-host answer: the app runs only its own scripts and styles, talks only to
 * its own origin, is never framed, and sends no path to other sites.
 */
const CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

export function webSecurityHeaders(_req: Request, res: Response, next: NextFunction): void {
  res.setHeader('Content-Security-Policy', CSP);
  res.setHeader('X-Frame-Options', 'DENY');
  res.setHeader('Referrer-Policy', 'same-origin');
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('Cross-Origin-Opener-Policy', 'same-origin');
  next();
}

/** A browser's navigation (it prefers HTML to JSON); API clients ask for JSON or anything. */
function wantsApp(req: Request): boolean {
  return (req.method === 'GET' || req.method === 'HEAD') && req.accepts(['json', 'html']) === 'html';
}

/**
 * The app's files (hashed names under /assets: cached a year, immutable) and, for a browser's
 * navigation to any other path (an approval link `/accounts/{id}/approvals/{approvalId}`
 * included), index.html, so the app's router shows the page. API calls, which ask for JSON, pass
 * through to the API untouched. Without a build this serves nothing and the API answers as before.
 */
export function webAppRouter(dir = WEB_APP_DIR): Router {
  const router = Router();
  const index = path.join(dir, 'index.html');
  router.use(
    express.static(dir, {
      index: false,
      redirect: false,
      fallthrough: true,
      setHeaders(res, file) {
        const immutable = file.startsWith(path.join(dir, 'assets') + path.sep);
        res.setHeader('Cache-Control', immutable ? 'public, max-age=31536000, immutable' : 'public, max-age=3600');
      },
    }),
  );
  router.use((req, res, next) => {
    if (!wantsApp(req) || req.path.startsWith('/auth/') || !fs.existsSync(index)) return next();
    res.setHeader('Cache-Control', 'no-cache');
    res.sendFile(index);
  });
  return router;
}
