import { Router, type Response } from 'express';
import { pipeline } from 'node:stream/promises';
import Joi from 'joi';
import {
  completeUpload, contentTypeSchema, fileIdSchema, fileNameSchema, fileStoreFor, getFile, listFiles, listQuerySchema,
  readFileContent, reserveUpload, toFileView, type FileRow,
} from '@teamchat/core';
import { requireWebSession } from '../http/account';
import { creating } from '../http/create';
import { listRequest, sendPage } from '../http/lists';
import { actorOf, depsOf, locals } from '../http/locals';
import { validate } from '../http/validate';

const reserveBody = Joi.object({
  name: fileNameSchema.required(),
  size: Joi.number().integer().min(1).max(Number.MAX_SAFE_INTEGER).required(),
  content_type: contentTypeSchema.required(),
});
const fileParams = { fileId: fileIdSchema.required() };

/** `attachment; filename="…"; filename*=UTF-8''…` (RFC 6266): an ASCII fallback and the exact name. */
function contentDisposition(name: string): string {
  const ascii = name.replace(/[^\x20-\x7e]|["\\%]/g, '_');
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(name).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)}`;
}

/** Headers of a file's bytes: always a download, never rendered or sniffed from our origin. */
function setContentHeaders(res: Response, file: FileRow): void {
  res.setHeader('Content-Type', file.contentType);
  res.setHeader('Content-Length', String(file.size));
  res.setHeader('Content-Disposition', contentDisposition(file.name));
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('Content-Security-Policy', 'sandbox');
  res.setHeader('Cache-Control', 'private, no-store');
}

/**
 * Uploads and files (spec: Files and search; docs/api.md "Files"). Web session only: a credential
 * gets 403 forbidden, reason web_session_required.
 */
export function filesRouter(): Router {
  const router = Router({ mergeParams: true });

  router.post('/uploads', requireWebSession, validate({ body: reserveBody }), creating(async ({ tx, deps, actor, body }) => {
    const out = await reserveUpload(tx, deps.config, fileStoreFor(deps.config), {
      actor, name: body.name, size: body.size, contentType: body.content_type, now: deps.now(),
    });
    return {
      status: 201,
      body: {
        file: toFileView(out.file),
        upload: { url: out.upload.url, method: 'PUT', headers: out.upload.headers, expires_at: out.upload.expiresAt.toISOString() },
      },
    };
  }));

  router.post('/uploads/:fileId/complete', requireWebSession, validate({ params: fileParams }), async (req, res) => {
    const deps = depsOf(req);
    const file = await completeUpload(deps.database.db, fileStoreFor(deps.config), {
      actor: actorOf(res), fileId: locals(res).valid.params.fileId, now: deps.now(),
    });
    res.json(toFileView(file));
  });

  router.get('/files', requireWebSession, validate({ query: listQuerySchema }), async (req, res) => {
    const page = listRequest<string>(req, res, 'files');
    const after = page.after === null ? null : Number(page.after);
    const rows = await listFiles(depsOf(req).database.db, { actor: actorOf(res), limit: page.limit, after });
    sendPage(req, res, 'files', rows, page.limit, toFileView, (f) => String(f.seq));
  });

  router.get('/files/:fileId', requireWebSession, validate({ params: fileParams }), async (req, res) => {
    res.json(toFileView(await getFile(depsOf(req).database.db, { actor: actorOf(res), fileId: locals(res).valid.params.fileId })));
  });

  router.get('/files/:fileId/content', requireWebSession, validate({ params: fileParams }), async (req, res) => {
    const deps = depsOf(req);
    const { file, body } = await readFileContent(deps.database.db, fileStoreFor(deps.config), {
      actor: actorOf(res), fileId: locals(res).valid.params.fileId,
    });
    // A download is one call unit whatever its size (docs/api.md "Files"), not one per 16 KB.
    const l = locals(res);
    if (l.limits) l.limits.read = undefined;
    setContentHeaders(res, file);
    await pipeline(body, res);
  });

  return router;
}
