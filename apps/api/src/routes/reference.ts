import fs from 'node:fs';
import type { Response } from 'express';
import { DEFAULT_SERVERS, buildDocument, type Host, type ServerEntry } from '@teamchat/contract';
import type { Deps } from '@teamchat/core';
import { depsOf, locals } from '../http/locals';
import type { HandlerMap } from './handlers';

/**
 * The API reference on both hosts, unauthenticated (docs/api.md "The OpenAPI document"):
 * GET /openapi.json (the document, `servers` naming the host that served it) and GET /docs
 * (Redoc's standalone bundle, from the `redoc` package, served from this origin: no CDN, no
 * outside fonts; the Content-Security-Policy keeps the page to this origin).
 */

/** Each host's document, serialized once per process (it depends only on the configured URLs). */
const documents = new WeakMap<Deps, Map<Host, string>>();

function documentFor(deps: Deps, host: Host): string {
  let byHost = documents.get(deps);
  if (!byHost) documents.set(deps, (byHost = new Map()));
  let text = byHost.get(host);
  if (!text) {
    const hosts: Record<Host, ServerEntry> = {
      api: { url: deps.config.publicApiUrl, description: DEFAULT_SERVERS.api.description },
      web: { url: deps.config.publicWebUrl, description: DEFAULT_SERVERS.web.description },
    };
    text = JSON.stringify(buildDocument({ servers: [hosts[host]], hosts }));
    byHost.set(host, text);
  }
  return text;
}

let bundle: Buffer | null = null;
const redocBundle = (): Buffer => (bundle ??= fs.readFileSync(require.resolve('redoc/bundles/redoc.standalone.js')));

/** Redoc renders `spec-url` by itself: no inline script, so the policy needs no 'unsafe-inline' for scripts. */
const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>API reference</title>
<style>body { margin: 0; padding: 0; }</style>
</head>
<body>
<redoc spec-url="/openapi.json"></redoc>
<script src="/docs/redoc.standalone.js"></script>
</body>
</html>
`;

/** Same origin only; Redoc styles inline (styled-components) and searches in a blob worker. */
const POLICY = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self'; "
  + "connect-src 'self'; worker-src 'self' blob:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

function sendText(res: Response, type: string, body: string | Buffer, cache: string): void {
  res.setHeader('Content-Type', type);
  res.setHeader('Cache-Control', cache);
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.send(body);
}

export const referenceHandlers = {
  getOpenApiDocument: (req, res) => {
    sendText(res, 'application/json; charset=utf-8', documentFor(depsOf(req), locals(res).host), 'no-cache');
  },
  getApiReference: (_req, res) => {
    res.setHeader('Content-Security-Policy', POLICY);
    sendText(res, 'text/html; charset=utf-8', PAGE, 'no-cache');
  },
  getApiReferenceScript: (_req, res) => {
    sendText(res, 'text/javascript; charset=utf-8', redocBundle(), 'public, max-age=3600');
  },
} satisfies HandlerMap;
