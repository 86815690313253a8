import fs from 'node:fs';
import path from 'node:path';
import express, { Router, type NextFunction, type Request, type Response } from 'express';
import type { Config } from '@teamchat/core';

/**
 * The web app's static build (apps/web/dist, `npm run build -w @teamchat/web`), served by the web
 * host at `/` (docs/web.md, "Serving"). Same place relative to this file whether it runs as
 * TypeScript (src/http) or compiled (dist/http).
 */
export const WEB_APP_DIR = path.resolve(__dirname, '../../../web/dist');

/**
 * Where the browser sends an upload's bytes when that is not this origin: the S3 driver's
 * presigned URLs (docs/api.md "Storage drivers"). With `S3_ENDPOINT` (path-style) its origin;
 * on AWS the bucket's virtual-hosted and the region's path-style origins. The local driver's URL
 * is on the web host itself (`'self'`).
 */
export function uploadOrigins(config: Pick<Config, 'filesDriver' | 's3Endpoint' | 's3Bucket' | 's3Region'>): string[] {
  if (config.filesDriver !== 's3') return [];
  if (config.s3Endpoint) return [new URL(config.s3Endpoint).origin];
  return [`https://${config.s3Bucket}.s3.${config.s3Region}.amazonaws.com`, `https://s3.${config.s3Region}.amazonaws.com`];
}

/**
 * Headers on every web-host answer: the app runs only its own scripts and styles, talks only to
 * its own origin (and the file store's, for uploads), is never framed, and sends no path to
 * other sites.
 */
export function webSecurityHeaders(config: Pick<Config, 'filesDriver' | 's3Endpoint' | 's3Bucket' | 's3Region'>) {
  const csp = [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "font-src 'self'",
    ["connect-src 'self'", ...uploadOrigins(config)].join(' '),
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ');
  return (_req: Request, res: Response, next: NextFunction): void => {
    res.setHeader('Content-Security-Policy', csp);
    res.setHeader('X-Frame-Options', 'DENY');
    res.setHeader('Referrer-Policy', 'same-origin');
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('Cross-Origin-Opener-Policy', 'same-origin');
    next();
  };
}

/**
 * A file's bytes are a download the browser navigates to (a link with `download`), sending its
 * navigation `Accept`; the API answers it, never the app.
 */
const DOWNLOAD_PATH = /^\/accounts\/[^/]+\/files\/[^/]+\/content$/;

/** A browser's navigation (it prefers HTML to JSON); API clients ask for JSON or anything. */
function wantsApp(req: Request): boolean {
  return (req.method === 'GET' || req.method === 'HEAD') && req.accepts(['json', 'html']) === 'html' && !DOWNLOAD_PATH.test(req.path);
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
